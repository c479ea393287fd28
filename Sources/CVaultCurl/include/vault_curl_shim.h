#ifndef VAULT_CURL_SHIM_H
#define VAULT_CURL_SHIM_H

#include <stddef.h>

/// What one request may use: TLS files (paths, NULL for none), an Authorization header value (an etcd
/// token), and its time limits.
typedef struct vcurl_options {
    const char *ca_file;
    const char *certificate_file;
    const char *key_file;
    const char *authorization;
    long timeout_ms;
    long connect_timeout_ms;
    size_t maximum_body;
    /// Non-zero: a new connection, not kept afterwards (a write that libcurl must never resend
    /// silently on a reused connection that died).
    int fresh_connection;
} vcurl_options;

/// The outcome of one request: the curl code (0: a response came), its message, the HTTP status, and
/// the body (malloc'd; vcurl_response_free wipes and frees it).
typedef struct vcurl_response {
    int curl_code;
    char error[256];
    long status;
    unsigned char *body;
    size_t length;
    int truncated;
} vcurl_response;

/// A reusable easy handle (connections are kept alive between requests); NULL when libcurl could not be
/// loaded (vcurl_load_error says why) or cannot make one. The first call loads libcurl.so.4.
void *vcurl_handle_new(void);
/// Why libcurl.so.4 could not be loaded (the loader's words), or NULL once it is. Loads it if no call
/// did yet.
const char *vcurl_load_error(void);
void vcurl_handle_free(void *handle);

/// POSTs `length` bytes of JSON to `url` (http or https only; no proxy, no redirects) and fills
/// `response`. Returns response->curl_code.
int vcurl_post_json(void *handle, const char *url, const unsigned char *body, size_t length,
                    const vcurl_options *options, vcurl_response *response);

void vcurl_response_free(vcurl_response *response);

/// Called with each piece of a streamed response as it arrives, and about once a second with NULL and
/// 0 while nothing arrives; a nonzero return ends the transfer.
typedef int (*vcurl_chunk_callback)(void *context, const unsigned char *bytes, size_t length);

/// POSTs as vcurl_post_json, but hands the response to `callback` piece by piece instead of keeping
/// it (for etcd's watch, which streams until it is cancelled); options->timeout_ms 0 means no limit.
/// `response` gets the curl code, its message and the HTTP status, and no body.
int vcurl_stream_json(void *handle, const char *url, const unsigned char *body, size_t length,
                      const vcurl_options *options, vcurl_chunk_callback callback, void *context,
                      vcurl_response *response);

#endif
