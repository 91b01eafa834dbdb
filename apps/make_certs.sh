#!/usr/bin/env bash
# apps/make_certs.sh DIR -- a throwaway CA and certificates for mutual TLS between
# `atrain node` hosts and the `atrain run --hosts` driver (tests/deploy/ use it too).
#
#   hosts:  atrain node --tls-cert DIR/host.pem --tls-key DIR/host.key --tls-ca DIR/ca.pem
#   driver: atrain run ... --tls-cert DIR/client.pem --tls-key DIR/client.key --tls-ca DIR/ca.pem
#
# host.pem names localhost/127.0.0.1 only (caf_openssl checks the chain, not the name);
# for real machines use your own CA, or this one's ca.key to sign more (see mkleaf below).
#
# Creates in DIR (EC P-256, SHA-256, valid 2 days, no passphrases):
#   ca.pem / ca.key           test CA (the one hosts and clients trust)
#   host.pem / host.key       host cert signed by CA, CN=localhost,
#                             SAN DNS:localhost, IP:127.0.0.1, serverAuth+clientAuth
#   client.pem / client.key   client cert signed by CA, CN=atrain-client,
#                             serverAuth+clientAuth
#   rogue-ca.pem / rogue-ca.key  a second, untrusted CA
#   rogue.pem / rogue.key     cert signed by the rogue CA (CN=localhost, same SANs)
#
# Idempotent: everything is regenerated on every run (files are replaced
# atomically per step), so re-running always yields a consistent set.
# Non-interactive. Exits non-zero with a message on any failure.
set -euo pipefail

die() { echo "make_certs.sh: error: $*" >&2; exit 1; }

[[ $# -eq 1 && $1 != -h && $1 != --help ]] || {
  echo "usage: apps/make_certs.sh DIR   (writes ca, host, client, rogue-ca, rogue .pem/.key into DIR)" >&2
  exit 2
}
command -v openssl >/dev/null 2>&1 || die "openssl CLI not found in PATH (install package 'openssl')"

DIR=$1
DAYS=${CERT_DAYS:-2}
mkdir -p "$DIR" || die "cannot create $DIR"
cd "$DIR"
TMP=$(mktemp -d "./.mkcerts.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Both client and host certs get both EKUs: a CAF node may be server for
# one connection and client for another (the openssl manager uses the same
# cert/key for accept and connect).
cat > "$TMP/ext_leaf_localhost.cnf" <<'EOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
cat > "$TMP/ext_leaf_client.cnf" <<'EOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:atrain-client
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

genkey() { # out
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$TMP/$1" 2>"$TMP/err" || { cat "$TMP/err" >&2; die "key generation failed ($1)"; }
}

mkca() { # name subject
  genkey "$1.key"
  openssl req -x509 -new -sha256 -days "$DAYS" -key "$TMP/$1.key" \
    -subj "$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -out "$TMP/$1.pem" 2>"$TMP/err" || { cat "$TMP/err" >&2; die "CA creation failed ($1)"; }
}

mkleaf() { # name subject ca extfile
  genkey "$1.key"
  openssl req -new -sha256 -key "$TMP/$1.key" -subj "$2" -out "$TMP/$1.csr" \
    2>"$TMP/err" || { cat "$TMP/err" >&2; die "CSR creation failed ($1)"; }
  openssl x509 -req -sha256 -days "$DAYS" -in "$TMP/$1.csr" \
    -CA "$TMP/$3.pem" -CAkey "$TMP/$3.key" -set_serial "0x$(openssl rand -hex 16)" \
    -extfile "$TMP/$4" -out "$TMP/$1.pem" 2>"$TMP/err" \
    || { cat "$TMP/err" >&2; die "signing failed ($1)"; }
}

mkca   ca        "/CN=atrain test CA"
mkleaf host      "/CN=localhost"       ca       ext_leaf_localhost.cnf
mkleaf client    "/CN=atrain-client"   ca       ext_leaf_client.cnf
mkca   rogue-ca  "/CN=atrain ROGUE CA"
mkleaf rogue     "/CN=localhost"       rogue-ca ext_leaf_localhost.cnf

# Sanity checks: good certs verify against ca.pem, rogue does not.
for c in host client; do
  openssl verify -CAfile "$TMP/ca.pem" "$TMP/$c.pem" >/dev/null 2>&1 \
    || die "$c.pem does not verify against ca.pem"
done
if openssl verify -CAfile "$TMP/ca.pem" "$TMP/rogue.pem" >/dev/null 2>&1; then
  die "rogue.pem unexpectedly verifies against ca.pem"
fi

chmod 600 "$TMP"/*.key
chmod 644 "$TMP"/*.pem
for f in ca rogue-ca host client rogue; do
  mv -f "$TMP/$f.pem" "$f.pem"
  mv -f "$TMP/$f.key" "$f.key"
done
echo "make_certs.sh: wrote ca, host, client, rogue-ca, rogue (.pem/.key) to $(pwd)"
