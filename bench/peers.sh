#!/usr/bin/env bash
# Installs the peer gateways that `make bench-peers` runs beside Relaygate, outside the
# repository (default ~/.cache/relaygate-bench-peers, or $RELAYGATE_BENCH_PEERS):
#   litellm/   a virtualenv with the LiteLLM proxy (litellm[proxy], pinned below)
#   portkey/   an npm prefix with Portkey's gateway (@portkey-ai/gateway, pinned below)
# Re-running it is cheap: an install of the pinned version is kept.
# The bench (bench/peers.py) starts both on loopback against its fake upstream.
set -euo pipefail

LITELLM_VERSION=1.90.7  # newer releases need certifi>=2026.10.19, not yet on the index
PORTKEY_VERSION=1.15.2
DIR=${RELAYGATE_BENCH_PEERS:-$HOME/.cache/relaygate-bench-peers}
PYTHON=${PYTHON:-python3}

mkdir -p "$DIR"
if [ "$(cat "$DIR/litellm/.version" 2>/dev/null)" != "$LITELLM_VERSION" ]; then
    echo "bench-peers: installing litellm[proxy]==$LITELLM_VERSION into $DIR/litellm ..."
    rm -rf "$DIR/litellm"
    "$PYTHON" -m venv "$DIR/litellm"
    "$DIR/litellm/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$LITELLM_VERSION"
    echo "$LITELLM_VERSION" > "$DIR/litellm/.version"
fi
if [ "$(cat "$DIR/portkey/.version" 2>/dev/null)" != "$PORTKEY_VERSION" ]; then
    echo "bench-peers: installing @portkey-ai/gateway@$PORTKEY_VERSION into $DIR/portkey ..."
    rm -rf "$DIR/portkey"
    mkdir -p "$DIR/portkey"
    npm install --prefix "$DIR/portkey" --no-audit --no-fund --loglevel=error "@portkey-ai/gateway@$PORTKEY_VERSION"
    echo "$PORTKEY_VERSION" > "$DIR/portkey/.version"
fi
printf '{"litellm": "%s", "portkey": "%s"}\n' "$LITELLM_VERSION" "$PORTKEY_VERSION" > "$DIR/versions.json"
echo "bench-peers: LiteLLM proxy $LITELLM_VERSION and Portkey gateway $PORTKEY_VERSION ready in $DIR"
