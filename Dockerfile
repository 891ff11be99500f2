# jobgate's image, for those who build with Docker (`docker build -t jobgate:0.1.0 .`).
#
# It is the image `python -m envtest build-image` writes without Docker (envtest/image.py):
# Debian 12's python3.11; jobgate's wheel, with the rule engine compiled by mypyc, and its
# dependencies from PyPI in the virtual environment /opt/jobgate, without pip; and only what
# the runtime needs, chosen by the same code (envtest/image_contents.py's `assemble`, standard
# library only, copied alone and run in the build stage): no shell, no package manager, user
# 65532, bytecode compiled for a read-only root filesystem. tests/envtest/test_image.py keeps
# this file's packages, paths, user, entrypoint and environment equal to the image's facts in
# envtest/image_contents.py; tests/envtest/test_dockerfile.py builds it with buildah and compares
# the result with that image, file by file.

FROM debian:bookworm AS build
# Only for a build behind a TLS-intercepting proxy: the path of a CA bundle that pip should trust,
# mounted into the build (never copied into the image). Unset, pip uses its own.
ARG PIP_CERT
# The runtime's packages, then what compiling the wheel needs.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3.11 ca-certificates netbase libstdc++6 \
      python3.11-dev python3.11-venv gcc
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY build_support build_support
COPY jobgate jobgate
COPY webhook webhook
COPY controller controller
COPY certs certs
# The compiled wheel, the wheels of its dependencies, and pip's wheel to install them with.
RUN python3.11 -m venv /opt/build \
 && JOBGATE_COMPILE=1 /opt/build/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/build/bin/pip download --only-binary=:all: --dest /wheels /wheels/jobgate-*.whl \
 && /opt/build/bin/pip download --only-binary=:all: --no-deps --dest /installer pip
# The runtime's virtual environment, without pip (it runs from its wheel); pip compiles every module.
RUN python3.11 -m venv --without-pip /opt/jobgate \
 && /opt/jobgate/bin/python "$(echo /installer/pip-*.whl)/pip" install --no-cache-dir --no-index \
      --find-links /wheels jobgate
# Only what the runtime uses, chosen as the local build chooses it.
COPY envtest/image_contents.py envtest/image_contents.py
RUN python3.11 envtest/image_contents.py assemble / /rootfs

FROM scratch
COPY --from=build /rootfs /
ENV PATH=/opt/jobgate/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
WORKDIR /
ENTRYPOINT ["jobgate"]
CMD ["--help"]
