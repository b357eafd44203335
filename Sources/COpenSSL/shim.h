// OpenSSL from the system (Debian/Ubuntu: libssl-dev; Fedora: openssl-devel; Arch: openssl), for
// the TLS of Syncplay rooms. Some of its calls are macros, which Swift cannot call: these
// wrappers can be.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

static inline long playerkit_ssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline long playerkit_ssl_ctx_require_tls12(SSL_CTX *context) {
    return SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

static inline void playerkit_ssl_ctx_verify_peer(SSL_CTX *context) {
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
}
