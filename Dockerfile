# The image the Deployment and the certificate Job run: `jobgate` as a non-root user.
# The wheel is built with the rule engine compiled by mypyc (JOBGATE_COMPILE=1); the full
# python image has the C compiler for that, the runtime image does not need one.
FROM python:3.11 AS build
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY build_support build_support
COPY jobgate jobgate
COPY webhook webhook
COPY controller controller
COPY certs certs
RUN JOBGATE_COMPILE=1 python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN python -m pip install --no-cache-dir --no-index --find-links /wheels jobgate && rm -rf /wheels
USER 65532:65532
ENTRYPOINT ["jobgate"]
CMD ["--help"]
