"""The GitHub network edges: the checks API, the Actions artifact services, the REST calls of the publisher."""
