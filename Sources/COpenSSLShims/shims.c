#define _GNU_SOURCE /* memmem */
#include "orchard_openssl.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/crypto.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t providers_once = PTHREAD_ONCE_INIT;

static void load_providers(void) {
    /* Loading "legacy" turns off the implicit default provider, so load both. */
    OSSL_PROVIDER_load(NULL, "legacy");
    OSSL_PROVIDER_load(NULL, "default");
}

static void last_error(char *message, size_t length, const char *fallback) {
    unsigned long code = ERR_peek_last_error();
    if (code != 0 && length > 0) {
        ERR_error_string_n(code, message, length);
    } else if (length > 0) {
        snprintf(message, length, "%s", fallback);
    }
    ERR_clear_error();
}

/* The key as unencrypted PKCS#8 DER, with its type and size. */
static int export_pkcs8(EVP_PKEY *key, unsigned char **der, size_t *length, char *type, size_t type_length, int *bits) {
    int id = EVP_PKEY_get_base_id(key);
    snprintf(type, type_length, "%s", id == EVP_PKEY_RSA ? "RSA" : id == EVP_PKEY_EC ? "EC" : "other");
    *bits = EVP_PKEY_get_bits(key);
    PKCS8_PRIV_KEY_INFO *info = EVP_PKEY2PKCS8(key);
    if (info == NULL) return 0;
    unsigned char *buffer = NULL;
    int size = i2d_PKCS8_PRIV_KEY_INFO(info, &buffer);
    PKCS8_PRIV_KEY_INFO_free(info);
    if (size <= 0) return 0;
    *der = malloc((size_t)size);
    if (*der == NULL) {
        OPENSSL_clear_free(buffer, (size_t)size);
        return 0;
    }
    memcpy(*der, buffer, (size_t)size);
    OPENSSL_clear_free(buffer, (size_t)size);
    *length = (size_t)size;
    return 1;
}

static int append_der(X509 *certificate, unsigned char **buffer, size_t *length) {
    int size = i2d_X509(certificate, NULL);
    if (size <= 0) return 0;
    unsigned char *grown = realloc(*buffer, *length + (size_t)size);
    if (grown == NULL) return 0;
    *buffer = grown;
    unsigned char *cursor = grown + *length;
    if (i2d_X509(certificate, &cursor) != size) return 0;
    *length += (size_t)size;
    return 1;
}

int orchard_pkcs12_parse(const unsigned char *data, size_t length, const char *password,
                         orchard_pkcs12_contents *out, char *message, size_t message_length) {
    memset(out, 0, sizeof(*out));
    if (message_length > 0) message[0] = '\0';
    pthread_once(&providers_once, load_providers);
    ERR_clear_error();

    const unsigned char *cursor = data;
    PKCS12 *p12 = d2i_PKCS12(NULL, &cursor, (long)length);
    if (p12 == NULL) {
        last_error(message, message_length, "not a PKCS#12 file");
        return ORCHARD_PKCS12_NOT_PKCS12;
    }
    /* An empty password and no password are different MACs; try what was given, then the other. */
    const char *pass = password;
    if (!PKCS12_verify_mac(p12, pass, pass ? -1 : 0)) {
        if (pass == NULL && PKCS12_verify_mac(p12, "", 0)) {
            pass = "";
        } else if (pass != NULL && pass[0] == '\0' && PKCS12_verify_mac(p12, NULL, 0)) {
            pass = NULL;
        } else {
            PKCS12_free(p12);
            last_error(message, message_length, "MAC verification failed");
            return ORCHARD_PKCS12_BAD_PASSWORD;
        }
    }
    EVP_PKEY *key = NULL;
    X509 *leaf = NULL;
    STACK_OF(X509) *chain = NULL;
    int parsed = PKCS12_parse(p12, pass, &key, &leaf, &chain);
    PKCS12_free(p12);
    if (!parsed) {
        last_error(message, message_length, "cannot decrypt the PKCS#12 contents");
        return ORCHARD_PKCS12_FAILED;
    }
    int result = ORCHARD_PKCS12_OK;
    if (leaf != NULL && !append_der(leaf, &out->certificate, &out->certificate_length)) result = ORCHARD_PKCS12_FAILED;
    for (int index = 0; chain != NULL && index < sk_X509_num(chain); index++) {
        if (!append_der(sk_X509_value(chain, index), &out->chain, &out->chain_length)) result = ORCHARD_PKCS12_FAILED;
    }
    if (key != NULL) {
        int id = EVP_PKEY_get_base_id(key);
        snprintf(out->key_type, sizeof(out->key_type), "%s", id == EVP_PKEY_RSA ? "RSA" : id == EVP_PKEY_EC ? "EC" : "other");
        out->key_bits = EVP_PKEY_get_bits(key);
        out->key_matches_certificate = leaf != NULL && X509_check_private_key(leaf, key) == 1;
        char type[16];
        int bits = 0;
        if (!export_pkcs8(key, &out->key_pkcs8, &out->key_pkcs8_length, type, sizeof(type), &bits)) result = ORCHARD_PKCS12_FAILED;
    }
    EVP_PKEY_free(key);
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    if (result != ORCHARD_PKCS12_OK) {
        orchard_pkcs12_free(out);
        if (message_length > 0) snprintf(message, message_length, "out of memory");
    }
    ERR_clear_error();
    return result;
}

void orchard_pkcs12_free(orchard_pkcs12_contents *contents) {
    if (contents->key_pkcs8 != NULL) OPENSSL_cleanse(contents->key_pkcs8, contents->key_pkcs8_length);
    free(contents->key_pkcs8);
    contents->key_pkcs8 = NULL;
    contents->key_pkcs8_length = 0;
    free(contents->certificate);
    free(contents->chain);
    contents->certificate = NULL;
    contents->chain = NULL;
    contents->certificate_length = 0;
    contents->chain_length = 0;
}

/* Password callback state: what was given, and whether OpenSSL asked (the key is encrypted). */
typedef struct password_request {
    const char *password;
    int asked;
} password_request;

static int password_callback(char *buffer, int size, int rwflag, void *user) {
    (void)rwflag;
    password_request *request = user;
    request->asked = 1;
    if (request->password == NULL) return -1;
    size_t length = strlen(request->password);
    if (length > (size_t)size) return -1;
    memcpy(buffer, request->password, length);
    return (int)length;
}

static EVP_PKEY *read_der_key(const unsigned char *data, size_t length, password_request *request) {
    const unsigned char *cursor = data;
    EVP_PKEY *key = d2i_AutoPrivateKey(NULL, &cursor, (long)length);
    if (key != NULL) return key;
    ERR_clear_error();
    BIO *bio = BIO_new_mem_buf(data, (int)length);
    if (bio == NULL) return NULL;
    key = d2i_PKCS8PrivateKey_bio(bio, NULL, password_callback, request);
    BIO_free(bio);
    return key;
}

int orchard_private_key_read(const unsigned char *data, size_t length, const char *password,
                             orchard_private_key *out, char *message, size_t message_length) {
    memset(out, 0, sizeof(*out));
    if (message_length > 0) message[0] = '\0';
    pthread_once(&providers_once, load_providers);
    ERR_clear_error();
    password_request request = {password, 0};
    EVP_PKEY *key = NULL;
    BIO *bio = BIO_new_mem_buf(data, (int)length);
    if (bio != NULL) {
        key = PEM_read_bio_PrivateKey(bio, NULL, password_callback, &request);
        BIO_free(bio);
    }
    int looks_pem = length > 10 && memmem(data, length, "-----BEGIN ", 11) != NULL;
    if (key == NULL && !request.asked && !looks_pem) {
        ERR_clear_error();
        key = read_der_key(data, length, &request);
    }
    if (key == NULL) {
        int code = !request.asked ? ORCHARD_KEY_NOT_A_KEY : password == NULL ? ORCHARD_KEY_NEEDS_PASSWORD : ORCHARD_KEY_BAD_PASSWORD;
        last_error(message, message_length, "no private key found");
        return code;
    }
    int ok = export_pkcs8(key, &out->pkcs8, &out->pkcs8_length, out->key_type, sizeof(out->key_type), &out->key_bits);
    EVP_PKEY_free(key);
    ERR_clear_error();
    if (!ok) {
        if (message_length > 0) snprintf(message, message_length, "cannot export the key");
        return ORCHARD_KEY_NOT_A_KEY;
    }
    return ORCHARD_KEY_OK;
}

void orchard_private_key_free(orchard_private_key *key) {
    if (key->pkcs8 != NULL) OPENSSL_cleanse(key->pkcs8, key->pkcs8_length);
    free(key->pkcs8);
    key->pkcs8 = NULL;
    key->pkcs8_length = 0;
}

orchard_rsa_key *orchard_rsa_key_read(const unsigned char *der, size_t length) {
    const unsigned char *cursor = der;
    EVP_PKEY *key = d2i_AutoPrivateKey(NULL, &cursor, (long)length);
    if (key != NULL && EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    ERR_clear_error();
    return (orchard_rsa_key *)key;
}

void orchard_rsa_key_free(orchard_rsa_key *key) { EVP_PKEY_free((EVP_PKEY *)key); }

long orchard_rsa_oaep_sha256_decrypt(const orchard_rsa_key *key, const unsigned char *in, size_t in_length,
                                     unsigned char *out, size_t out_capacity) {
    /* A context per call: a context is not safe to share between threads, the key is. */
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_pkey(NULL, (EVP_PKEY *)key, NULL);
    size_t length = out_capacity;
    int ok = context != NULL && EVP_PKEY_decrypt_init(context) == 1
             && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1
             && EVP_PKEY_CTX_set_rsa_oaep_md(context, EVP_sha256()) == 1
             && EVP_PKEY_CTX_set_rsa_mgf1_md(context, EVP_sha256()) == 1
             && EVP_PKEY_decrypt(context, out, &length, in, in_length) == 1;
    EVP_PKEY_CTX_free(context);
    if (!ok) {
        ERR_clear_error(); /* a refused token leaves nothing on this thread's error queue */
        return -1;
    }
    return (long)length;
}
