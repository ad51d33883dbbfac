#!/bin/sh
# A local CA and a certificate for localhost and 127.0.0.1, for gateway B of the compose set-up
# (deploy/compose/tls/). For anything but a local trial, use certificates from your CA.
set -eu
cd "$(dirname "$0")"
mkdir -p tls
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -keyout tls/ca.key -out tls/ca.pem -subj "/CN=AuthGate compose CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout tls/gateway.key -out tls/gateway.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > tls/gateway.ext
openssl x509 -req -in tls/gateway.csr -CA tls/ca.pem -CAkey tls/ca.key -CAcreateserial -days 30 \
  -extfile tls/gateway.ext -out tls/gateway.pem 2>/dev/null
# The container runs as user 10001: the key must be readable by it.
chmod 0644 tls/gateway.key
rm -f tls/gateway.csr tls/gateway.ext tls/ca.srl
echo "deploy/compose/tls: ca.pem (trust it in clients), gateway.pem, gateway.key"
