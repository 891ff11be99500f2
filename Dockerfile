# The image the Deployment and the certificate Job run: `jobgate` as a non-root user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook webhook
COPY controller controller
COPY certs certs
RUN python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN python -m pip install --no-cache-dir --no-index --find-links /wheels jobgate && rm -rf /wheels
USER 65532:65532
ENTRYPOINT ["jobgate"]
CMD ["--help"]
