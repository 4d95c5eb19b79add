/* The cryptography one payment token needs, through OpenSSL's libcrypto and nothing else:
 * the floor that Benchmarks/bench-tokens --count compares Orchard's instructions per token with.
 *
 *   token-primitives ec|rsa TOKENS SIGNED_ATTRIBUTES SIGNED_CONTENT DATA PRIVATE_KEY.pem
 *
 * Per token, as the real path does it: SHA-256 of the signed attributes and one verify of the
 * leaf's signature over them (ECDSA P-256 for EC_v1, RSA-2048 PKCS#1 v1.5 for RSA_v1), SHA-256
 * of the signed content, then for EC_v1 one ECDH P-256 and the KDF's SHA-256, for RSA_v1 one
 * RSA-2048 OAEP-SHA256 private decrypt of the wrapped key, and one AES-GCM open of the data
 * under a fresh key. Sizes are the vectors' (TokenBenchmark --count prints them). Like
 * `openssl speed`, keys are parsed and contexts set up once, outside the counted function
 * one_token (run under callgrind with --toggle-collect=one_token). */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static EVP_MD *sha256;
static EVP_PKEY_CTX *verify_context, *derive_context, *decrypt_context;
static EVP_CIPHER_CTX *cipher_context;
static const EVP_CIPHER *cipher;
static unsigned char attributes[4096], content[8192], data[8192], plain[8192], signature[512], wrapped[512], key[32], tag[16];
static size_t attributes_length, content_length, data_length, signature_length, wrapped_length;
static int ec;

static void fail(const char *what) {
    fprintf(stderr, "token-primitives: %s failed\n", what);
    exit(1);
}

static void digest(const unsigned char *bytes, size_t length, unsigned char out[32]) {
    if (!EVP_Digest(bytes, length, out, NULL, sha256, NULL)) fail("SHA-256");
}

__attribute__((noinline)) static void one_token(void) {
    unsigned char hash[32], secret[32], kdf[4 + 32 + 14 + 5 + 32] = {0, 0, 0, 1}, unwrapped[512];
    digest(attributes, attributes_length, hash);
    if (EVP_PKEY_verify(verify_context, signature, signature_length, hash, 32) != 1) fail("verify");
    digest(content, content_length, hash);
    size_t unwrapped_length = sizeof(unwrapped);
    if (ec) {
        size_t secret_length = sizeof(secret);
        if (EVP_PKEY_derive(derive_context, secret, &secret_length) != 1) fail("ECDH");
        memcpy(kdf + 4, secret, 32);
        digest(kdf, sizeof(kdf), key);
    } else if (EVP_PKEY_decrypt(decrypt_context, unwrapped, &unwrapped_length, wrapped, wrapped_length) != 1
               || unwrapped_length != 16 || memcmp(unwrapped, key, 16) != 0) {
        fail("RSA-OAEP decrypt");
    }
    static const unsigned char iv[16];
    int length = 0;
    if (!EVP_DecryptInit_ex(cipher_context, cipher, NULL, NULL, NULL)
        || !EVP_CIPHER_CTX_ctrl(cipher_context, EVP_CTRL_GCM_SET_IVLEN, 16, NULL)
        || !EVP_DecryptInit_ex(cipher_context, NULL, NULL, key, iv)
        || !EVP_DecryptUpdate(cipher_context, plain, &length, data, (int)data_length)
        || !EVP_CIPHER_CTX_ctrl(cipher_context, EVP_CTRL_GCM_SET_TAG, 16, tag)
        || EVP_DecryptFinal_ex(cipher_context, plain + length, &length) != 1) {
        fail("AES-GCM open");
    }
}

/* The data sealed under the key one_token derives, so that its open checks a real tag. */
static void seal(EVP_PKEY *private_key) {
    unsigned char hash[32], secret[32], kdf[4 + 32 + 14 + 5 + 32] = {0, 0, 0, 1};
    if (ec) {
        size_t secret_length = sizeof(secret);
        if (EVP_PKEY_derive(derive_context, secret, &secret_length) != 1) fail("ECDH");
        memcpy(kdf + 4, secret, 32);
        digest(kdf, sizeof(kdf), key);
    } else {
        EVP_PKEY_CTX *encrypt = EVP_PKEY_CTX_new(private_key, NULL);
        wrapped_length = sizeof(wrapped);
        if (encrypt == NULL || EVP_PKEY_encrypt_init(encrypt) != 1 || EVP_PKEY_CTX_set_rsa_padding(encrypt, RSA_PKCS1_OAEP_PADDING) != 1
            || EVP_PKEY_CTX_set_rsa_oaep_md(encrypt, sha256) != 1 || EVP_PKEY_CTX_set_rsa_mgf1_md(encrypt, sha256) != 1
            || EVP_PKEY_encrypt(encrypt, wrapped, &wrapped_length, key, 16) != 1) {
            fail("RSA-OAEP encrypt");
        }
        EVP_PKEY_CTX_free(encrypt);
    }
    static const unsigned char iv[16];
    int length = 0;
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    if (context == NULL || !EVP_EncryptInit_ex(context, cipher, NULL, NULL, NULL)
        || !EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, 16, NULL) || !EVP_EncryptInit_ex(context, NULL, NULL, key, iv)
        || !EVP_EncryptUpdate(context, data, &length, plain, (int)data_length) || !EVP_EncryptFinal_ex(context, data + length, &length)
        || !EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, tag)) {
        fail("AES-GCM seal");
    }
    EVP_CIPHER_CTX_free(context);
    /* The signature the leaf would have made over the signed attributes. */
    EVP_PKEY_CTX *sign = EVP_PKEY_CTX_new(private_key, NULL);
    digest(attributes, attributes_length, hash);
    signature_length = sizeof(signature);
    if (sign == NULL || EVP_PKEY_sign_init(sign) != 1 || (!ec && EVP_PKEY_CTX_set_rsa_padding(sign, RSA_PKCS1_PADDING) != 1)
        || EVP_PKEY_CTX_set_signature_md(sign, sha256) != 1 || EVP_PKEY_sign(sign, signature, &signature_length, hash, 32) != 1) {
        fail("sign");
    }
    EVP_PKEY_CTX_free(sign);
}

int main(int argc, char **argv) {
    if (argc != 7 || (strcmp(argv[1], "ec") != 0 && strcmp(argv[1], "rsa") != 0)) {
        fprintf(stderr, "usage: token-primitives ec|rsa TOKENS SIGNED_ATTRIBUTES SIGNED_CONTENT DATA PRIVATE_KEY.pem\n");
        return 2;
    }
    ec = strcmp(argv[1], "ec") == 0;
    long tokens = atol(argv[2]);
    attributes_length = (size_t)atol(argv[3]);
    content_length = (size_t)atol(argv[4]);
    data_length = (size_t)atol(argv[5]);
    if (attributes_length > sizeof(attributes) || content_length > sizeof(content) || data_length > sizeof(data)) fail("sizes");
    memset(attributes, 0x31, attributes_length);
    memset(content, 0x04, content_length);
    memset(plain, '{', data_length);
    FILE *file = fopen(argv[6], "r");
    EVP_PKEY *private_key = file ? PEM_read_PrivateKey(file, NULL, NULL, NULL) : NULL;
    if (file) fclose(file);
    if (private_key == NULL) fail("reading the private key");
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    cipher = ec ? EVP_aes_256_gcm() : EVP_aes_128_gcm();
    cipher_context = EVP_CIPHER_CTX_new();
    /* The same key plays the leaf (verify) and the merchant (ECDH or decrypt): the cost is the same. */
    verify_context = EVP_PKEY_CTX_new(private_key, NULL);
    if (sha256 == NULL || cipher_context == NULL || verify_context == NULL || EVP_PKEY_verify_init(verify_context) != 1
        || (!ec && EVP_PKEY_CTX_set_rsa_padding(verify_context, RSA_PKCS1_PADDING) != 1)
        || EVP_PKEY_CTX_set_signature_md(verify_context, sha256) != 1) {
        fail("verify setup");
    }
    if (ec) {
        EVP_PKEY *peer = EVP_EC_gen("P-256");
        derive_context = EVP_PKEY_CTX_new(private_key, NULL);
        if (peer == NULL || derive_context == NULL || EVP_PKEY_derive_init(derive_context) != 1
            || EVP_PKEY_derive_set_peer(derive_context, peer) != 1) {
            fail("ECDH setup");
        }
    } else {
        decrypt_context = EVP_PKEY_CTX_new(private_key, NULL);
        if (decrypt_context == NULL || EVP_PKEY_decrypt_init(decrypt_context) != 1
            || EVP_PKEY_CTX_set_rsa_padding(decrypt_context, RSA_PKCS1_OAEP_PADDING) != 1
            || EVP_PKEY_CTX_set_rsa_oaep_md(decrypt_context, sha256) != 1 || EVP_PKEY_CTX_set_rsa_mgf1_md(decrypt_context, sha256) != 1) {
            fail("RSA-OAEP setup");
        }
    }
    seal(private_key);
    for (long index = 0; index < tokens; index++) one_token();
    printf("%ld %s tokens' primitives\n", tokens, argv[1]);
    return 0;
}
