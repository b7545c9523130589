#!/bin/sh
# Makes a throw-away CA and a server certificate for 127.0.0.1 / localhost, for
# tests and demos only: the keys are written to DIR (never commit them).
#   scripts/make-test-certs.sh DIR
# DIR gets ca.pem, server.pem (chain: server then CA), server.key,
# client.pem and client.key (a client certificate for mutual TLS), and
# other-ca.pem: a second CA that did not sign the server, for refusal tests.
set -eu
dir=${1:?usage: make-test-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
days=7
quiet() { "$@" >/dev/null 2>&1 || { echo "make-test-certs: failed: $*" >&2; "$@"; exit 1; }; }

quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -keyout ca.key -out ca.pem -subj "/CN=Volley test CA"
quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -keyout other-ca.key -out other-ca.pem -subj "/CN=Volley unrelated CA"
quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout server.key -out server.csr -subj "/CN=localhost"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' > server.ext
quiet openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" \
  -extfile server.ext -out server.crt
cat server.crt ca.pem > server.pem
quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout client.key -out client.csr -subj "/CN=Volley test client"
printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n' > client.ext
quiet openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" \
  -extfile client.ext -out client.crt
cat client.crt ca.pem > client.pem
rm -f server.csr server.ext client.csr client.ext ca.srl other-ca.key
chmod 600 ca.key server.key client.key
echo "$dir: ca.pem server.pem server.key client.pem client.key other-ca.pem"
