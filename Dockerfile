# The image of the evidence-gate GitHub Action: Debian's Python and packages, no pip download at build time.
# The base is debian:trixie-slim pinned by its multi-arch index digest, written as a stage of its own so Dependabot
# (which does not resolve ARG in FROM) keeps the digest current. Tests substitute a locally built base with
# --build-arg BASE=...; the pinned stage is then never used, and BuildKit and buildah skip it.
ARG BASE=pinned-base
FROM debian:trixie-slim@sha256:a29215f6a35e51e22adffa17f89e9d2ef06214e64a2bad10d765c46aea49f11f AS pinned-base
FROM ${BASE}

# One layer: install without docs, man pages and translations (what debian:*-slim's dpkg config also drops), then
# remove the package lists and downloaded .debs so they never reach the image. git depends on perl only for
# scripts the gate never runs (send-email, svn, instaweb); dropping it saves 50 MB. An image built FROM this one
# that needs apt should run `apt-get install -y perl` first, or apt reports the broken dependency.
RUN printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
        'path-exclude /usr/share/lintian/*' > /etc/dpkg/dpkg.cfg.d/evidence-gate-slim \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates git python3 python3-github python3-jsonschema python3-pip python3-pytest \
        python3-requests python3-sortedcontainers python3-yaml \
    && dpkg --purge --force-depends perl liberror-perl \
        $(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'perl-modules-*' 'libperl5*' | awk '$1 == "ii" {print $2}') \
    && git --version \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
    && id nobody

# Hypothesis from PyPI, pinned by version and sha256 (a pure wheel: the same on every architecture). Debian trixie's
# 6.130 requires attrs, so the sealed run's harness would own the name `attr` and the action could not judge a
# project whose code is named so (attrs itself); 6.150 requires only sortedcontainers. pip (above) is there for
# `properties.install` (`"$EVIDENCE_GATE_PYTHON" -m pip install --target "$EVIDENCE_GATE_SITE" ...`), not for the gate.
ADD https://files.pythonhosted.org/packages/0f/6c/49e29a0b856be17048fa4a216cc21bf914623f66305f6327b7a9bcec6871/hypothesis-6.150.0-py3-none-any.whl /tmp/hypothesis.whl
RUN echo "caf1f752418c49ac805f11d909c5831aaceb96762aa3895e0c702468dedbe3fe  /tmp/hypothesis.whl" | sha256sum -c - \
    && python3 -m zipfile -e /tmp/hypothesis.whl "$(python3 -c 'import site; print(site.getsitepackages()[0])')" \
    && rm /tmp/hypothesis.whl && python3 -m compileall -q "$(python3 -c 'import hypothesis, os; print(os.path.dirname(hypothesis.__file__))')" \
    && python3 -c 'import hypothesis, importlib.metadata as m; assert m.version("hypothesis") == "6.150.0"'

# The package goes straight onto Debian's import path; bytecode is compiled now so each start is quick.
COPY src/evidence_gate /usr/lib/python3/dist-packages/evidence_gate
COPY entrypoint /usr/local/bin/evidence-gate-entrypoint
RUN printf '%s\n' '#!/usr/bin/python3' 'import sys' 'from evidence_gate.cli import entry' 'sys.exit(entry())' \
        > /usr/local/bin/evidence-gate \
    && chmod 0755 /usr/local/bin/evidence-gate /usr/local/bin/evidence-gate-entrypoint \
    && python3 -m compileall -q /usr/lib/python3/dist-packages/evidence_gate \
    && evidence-gate --version \
    && python3 -m evidence_gate.sealed.prebuild
# The last step builds Hypothesis' Unicode tables once, in /var/cache/evidence-gate/hypothesis-tables (root-owned,
# read-only to the sealed user): no gate run or worker in the image rebuilds them.

ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["/usr/local/bin/evidence-gate-entrypoint"]
