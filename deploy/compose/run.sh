#!/usr/bin/env bash
# Start or stop the compose cluster (docker-compose.yml): three servers and
# one client from the project's FROM scratch image.
#   ./run.sh up     build the static binary and the image, start the cluster
#   ./run.sh down   stop it and remove its containers, network and volumes
#   ./run.sh ps|logs [service]
# Environment (defaults in docker-compose.yml's header): COMPOSE_PROJECT_NAME,
# SCHED_SUBNET, SCHED_IMAGE_TAG, SCHED_S1_PORT, SCHED_S2_PORT, SCHED_S3_PORT.
# Uses `docker compose` when the plugin is there, else `docker-compose`.
set -euo pipefail
cd "$(dirname "$0")"
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-sched}"
export SCHED_SUBNET="${SCHED_SUBNET:-172.29.46.0/24}"
export SCHED_IMAGE_TAG="${SCHED_IMAGE_TAG:-latest}"
# The agents' addresses are .11-.13 and .21 of the subnet, a /24.
if [[ ! "$SCHED_SUBNET" =~ ^([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})\.0/24$ ]]; then
  echo "run.sh: SCHED_SUBNET must be a /24 such as 172.29.46.0/24, got '$SCHED_SUBNET'" >&2
  exit 1
fi
export SCHED_NET="${BASH_REMATCH[1]}"
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  echo "run.sh: neither 'docker compose' nor 'docker-compose' is installed" >&2
  exit 1
fi
case "${1:-up}" in
  up)
    mkdir -p build
    # The agents' config files, with the subnet's addresses.
    for f in server1.hcl server2.hcl server3.hcl client.hcl; do
      sed "s/@NET@/$SCHED_NET/g" "$f" > "build/$f"
    done
    # Stamped as `make build` stamps bin/sched (server members shows it).
    (cd ../.. && CGO_ENABLED=0 GOOS=linux go build -ldflags "$(make -s --no-print-directory print-ldflags)" \
      -o deploy/compose/build/sched ./cmd/sched)
    cp ../../e2e/docker/Dockerfile build/Dockerfile
    "${compose[@]}" up -d --build
    echo "==> s1 http://127.0.0.1:${SCHED_S1_PORT:-4646}, s2 :${SCHED_S2_PORT:-4656}, s3 :${SCHED_S3_PORT:-4666}; try: SCHED_ADDR=http://127.0.0.1:${SCHED_S1_PORT:-4646} bin/sched server members"
    ;;
  down)
    mkdir -p build
    for f in server1.hcl server2.hcl server3.hcl client.hcl; do
      [ -e "build/$f" ] || sed "s/@NET@/$SCHED_NET/g" "$f" > "build/$f"
    done
    "${compose[@]}" down -v
    ;;
  *) "${compose[@]}" "$@" ;;
esac
