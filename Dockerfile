# syntax=docker/dockerfile:1
# volsched's container image: `volsched run` as a non-root user, its SQLite cache in a
# volume. Build: docker build -t volsched .   Run: see deploy/deployment.yaml.
#
# The Python version follows pyproject's requires-python (>=3.11); both stages use the
# same image so the virtual environment's interpreter links stay valid when copied.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# ---------------------------------------------------------------------------- builder
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /src
RUN python -m venv /opt/volsched

# Dependencies first, from pyproject alone: editing the source does not reinstall them.
# Every dependency ships binary wheels for CPython 3.11 on amd64 and arm64, so no
# compiler is needed even here.
COPY pyproject.toml ./
RUN python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > requirements.txt \
    && /opt/volsched/bin/pip install --requirement requirements.txt

# Then the project itself, as a wheel (only the packages pyproject declares). pip and
# setuptools leave the venv afterwards: nothing imports them at run time.
COPY README.md ./
COPY cache ./cache
COPY scheduling ./scheduling
COPY daemon ./daemon
COPY emulator ./emulator
COPY migrations ./migrations
COPY volsched ./volsched
RUN /opt/volsched/bin/pip wheel --no-deps --wheel-dir /wheels . \
    && /opt/volsched/bin/pip install --no-deps /wheels/volsched-*.whl \
    && /opt/volsched/bin/pip uninstall --yes setuptools pip

# ------------------------------------------------------------------------------ final
FROM ${PYTHON_IMAGE}

ENV PATH=/opt/volsched/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

COPY --from=builder /opt/volsched /opt/volsched

# The database: volsched's default database.path is ./volsched.db, relative to the
# working directory, so the SQLite file (and its -wal/-shm siblings) lands in the
# volume. deploy/configmap.yaml sets the same path explicitly.
RUN install --directory --owner=65532 --group=65532 --mode=0700 /var/lib/volsched
VOLUME ["/var/lib/volsched"]
WORKDIR /var/lib/volsched

# Numeric, so Kubernetes can enforce runAsNonRoot without resolving a name.
USER 65532:65532

# /healthz /livez /readyz /metrics, and the extender API. Outside a container volsched
# listens on 127.0.0.1:10351; in one, every interface, so the image runs without a config
# file (a flag, or http.address in a config file, still wins).
ENV VOLSCHED_HTTP_ADDRESS=0.0.0.0:10351
EXPOSE 10351

ENTRYPOINT ["volsched"]
CMD ["run"]
