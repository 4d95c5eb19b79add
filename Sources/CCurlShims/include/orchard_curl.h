#ifndef ORCHARD_CURL_H
#define ORCHARD_CURL_H

#include <curl/curl.h>

/// Typed, non-variadic wrappers for libcurl's variadic calls, which Swift cannot call directly.

CURLcode orchard_curl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode orchard_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode orchard_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode orchard_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode orchard_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
/// Copies `length` bytes (curl keeps its own copy: CURL_BLOB_COPY).
CURLcode orchard_curl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length);
CURLcode orchard_curl_easy_setopt_share(CURL *handle, CURLSH *share);

typedef size_t (*orchard_curl_write_callback)(char *data, size_t size, size_t count, void *userdata);
CURLcode orchard_curl_easy_setopt_write_callback(CURL *handle, orchard_curl_write_callback callback, void *userdata);
CURLcode orchard_curl_easy_setopt_header_callback(CURL *handle, orchard_curl_write_callback callback, void *userdata);

CURLcode orchard_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode orchard_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value);
CURLcode orchard_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

CURLMcode orchard_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLSHcode orchard_curl_share_setopt_lock_data(CURLSH *share, curl_lock_data data);

/// Decides whether libcurl may connect to an address it resolved (`length` 4 for IPv4, 16 for
/// IPv6, network order): non-zero allows it.
typedef int (*orchard_address_check)(void *userdata, const unsigned char *address, size_t length);

/// What CURLOPT_OPENSOCKETDATA points at: the check and its argument. Owned by the caller, and
/// alive as long as the easy handle.
typedef struct {
    orchard_address_check check;
    void *userdata;
} orchard_address_guard;

/// Installs CURLOPT_OPENSOCKETFUNCTION: each address libcurl is about to connect to (after any
/// name resolution, for every connection it opens) goes to `guard->check` first. A refused one
/// gets no socket (CURL_SOCKET_BAD), so libcurl tries the next address or fails with
/// CURLE_COULDNT_CONNECT; nothing is sent to it.
CURLcode orchard_curl_easy_set_address_guard(CURL *handle, orchard_address_guard *guard);

/// The fields of a finished transfer's CURLMsg, without the union.
int orchard_curl_multi_info_read(CURLM *multi, CURL **handle, CURLcode *result);

#endif
