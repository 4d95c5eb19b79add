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
    unsigned char *key_pkcs8;        /* the key as unencrypted PKCS#8 DER; NULL if none (wiped on free) */
    size_t key_pkcs8_length;
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

/// A private key read from any format OpenSSL knows. `pkcs8` is malloc'd; free it with orchard_private_key_free.
typedef struct orchard_private_key {
    unsigned char *pkcs8;            /* unencrypted PKCS#8 DER */
    size_t pkcs8_length;
    char key_type[16];               /* "RSA", "EC" or "other" */
    int key_bits;
} orchard_private_key;

/// Result codes of orchard_private_key_read.
enum {
    ORCHARD_KEY_OK = 0,
    ORCHARD_KEY_NOT_A_KEY = 1,
    ORCHARD_KEY_NEEDS_PASSWORD = 2,
    ORCHARD_KEY_BAD_PASSWORD = 3,
};

/// Reads a private key: PEM (SEC1, PKCS#1, PKCS#8, encrypted PKCS#8, traditional encrypted
/// `Proc-Type: 4,ENCRYPTED`; other blocks such as `EC PARAMETERS` or certificates are skipped)
/// or DER (PKCS#8, encrypted PKCS#8, SEC1, PKCS#1). `password` may be NULL.
int orchard_private_key_read(const unsigned char *data, size_t length, const char *password,
                             orchard_private_key *out, char *message, size_t message_length);

void orchard_private_key_free(orchard_private_key *key);

/// An RSA private key held by OpenSSL: on CPUs with AVX-512 IFMA its private operation is about
/// twice as fast as BoringSSL's. Immutable once read, so one key may decrypt on many threads.
typedef struct orchard_rsa_key orchard_rsa_key;

/// Reads an RSA private key from DER (PKCS#1 or PKCS#8); NULL if it is not one.
orchard_rsa_key *orchard_rsa_key_read(const unsigned char *der, size_t length);

void orchard_rsa_key_free(orchard_rsa_key *key);

/// RSAES-OAEP decryption with SHA-256 and MGF1-SHA-256 (RSA_v1's wrapped key). `out` must hold
/// the key's size in bytes. Returns the plaintext's length, or -1 when it does not decrypt.
long orchard_rsa_oaep_sha256_decrypt(const orchard_rsa_key *key, const unsigned char *in, size_t in_length,
                                     unsigned char *out, size_t out_capacity);

#endif
