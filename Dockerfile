# The image the deploy/ Deployments run: `docker build -t pyvolcano:0.1.0 .`
FROM python:3.11-slim
WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir . && cd / && rm -rf /build
USER 65534
ENTRYPOINT ["pyvolcano"]
