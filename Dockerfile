# The image the deploy/ Deployments run: `docker build -t pyvolcano:0.1.0 .`
FROM python:3.11-slim
# the admission webhook makes its CA and serving certificate with the openssl command at start
RUN apt-get update && apt-get install -y --no-install-recommends openssl && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir . && cd / && rm -rf /build
USER 65534
ENTRYPOINT ["pyvolcano"]
