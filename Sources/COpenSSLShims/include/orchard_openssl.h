#ifndef ORCHARD_OPENSSL_H
#define ORCHARD_OPENSSL_H
#include <stddef.h>

/// What a PKCS#12 file holds. DER buffers are malloc'd; free them with orchard_pkcs12_free.
typedef struct orchard_pkcs12_contents {
    unsigned char *certificate;      /* the leaf (the one matching the key), DER; NULL if none */
    size_t certificate_length;
    unsigned char *chain;            /* the other certificates, DER, back to back */
    size_t chain_length;
    char key_type[16];               /* "RSA", "EC", "" when there is no key, or "other" */
    int key_bits;
    int key_matches_certificate;     /* 1 when the key is the leaf's */
} orchard_pkcs12_contents;

/// Result codes of orchard_pkcs12_parse.
enum {
    ORCHARD_PKCS12_OK = 0,
    ORCHARD_PKCS12_NOT_PKCS12 = 1,
    ORCHARD_PKCS12_BAD_PASSWORD = 2,
    ORCHARD_PKCS12_FAILED = 3,
};

/// Parses a PKCS#12 file, including legacy ones (RC2-40, 3DES) as macOS Keychain exports
/// them: OpenSSL 3's legacy provider is loaded once for that. `password` may be NULL.
/// On failure `message` holds OpenSSL's reason.
int orchard_pkcs12_parse(const unsigned char *data, size_t length, const char *password,
                         orchard_pkcs12_contents *out, char *message, size_t message_length);

void orchard_pkcs12_free(orchard_pkcs12_contents *contents);

#endif
