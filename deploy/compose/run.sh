#!/usr/bin/env bash
# Start or stop the compose cluster (docker-compose.yml): three servers and
# one client from the project's FROM scratch image.
#   ./run.sh up     build the static binary and the image, start the cluster
#   ./run.sh down   stop it and remove its containers, network and volumes
#   ./run.sh ps|logs [service]
# Uses `docker compose` when the plugin is there, else `docker-compose`.
set -euo pipefail
cd "$(dirname "$0")"
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-sched}"
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
    (cd ../.. && CGO_ENABLED=0 GOOS=linux go build -o deploy/compose/build/sched ./cmd/sched)
    cp ../../e2e/docker/Dockerfile build/Dockerfile
    "${compose[@]}" up -d --build
    echo "==> s1 http://127.0.0.1:${SCHED_S1_PORT:-4646}, s2 :${SCHED_S2_PORT:-4656}, s3 :${SCHED_S3_PORT:-4666}; try: SCHED_ADDR=http://127.0.0.1:${SCHED_S1_PORT:-4646} bin/sched server members"
    ;;
  down) "${compose[@]}" down -v ;;
  *) "${compose[@]}" "$@" ;;
esac
