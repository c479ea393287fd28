// libcurl's curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: this file
// makes one POST with fixed options. Bodies may hold tokens or passwords: buffers are wiped before
// they are freed.
#include "vault_curl_shim.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

typedef struct buffer {
    unsigned char *bytes;
    size_t length;
    size_t capacity;
    size_t maximum;
    int truncated;
} buffer;

static void wipe_free(unsigned char *bytes, size_t capacity) {
    if (bytes == NULL) return;
    volatile unsigned char *p = bytes;
    for (size_t i = 0; i < capacity; i++) p[i] = 0;
    free(bytes);
}

static size_t on_data(char *data, size_t size, size_t count, void *context) {
    buffer *b = context;
    size_t n = size * count;
    if (b->length + n > b->maximum) {
        b->truncated = 1;
        return 0;  // stops the transfer: CURLE_WRITE_ERROR
    }
    if (b->length + n > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 4096;
        while (capacity < b->length + n) capacity *= 2;
        unsigned char *grown = malloc(capacity);
        if (grown == NULL) return 0;
        if (b->length) memcpy(grown, b->bytes, b->length);
        wipe_free(b->bytes, b->capacity);
        b->bytes = grown;
        b->capacity = capacity;
    }
    memcpy(b->bytes + b->length, data, n);
    b->length += n;
    return n;
}

void *vcurl_handle_new(void) {
    pthread_once(&global_once, global_init);
    return curl_easy_init();
}

void vcurl_handle_free(void *handle) {
    if (handle) curl_easy_cleanup(handle);
}

/// What one request holds until it is done: its headers, the Authorization line (wiped at the end)
/// and curl's error text.
typedef struct request {
    struct curl_slist *headers;
    char *authorization;
    char errors[CURL_ERROR_SIZE];
} request;

/// The options every request has: the URL, http or https only, no redirect, never a proxy from the
/// environment (etcd endpoints are addressed directly), the JSON body, time limits and TLS files.
static void begin(CURL *curl, request *r, const char *url, const unsigned char *body, size_t length,
                  const vcurl_options *options) {
    curl_easy_reset(curl);
    memset(r, 0, sizeof(*r));
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (options->authorization) {
        size_t n = strlen(options->authorization) + sizeof("Authorization: ");
        r->authorization = malloc(n);
        if (r->authorization) {
            strcpy(r->authorization, "Authorization: ");
            strcat(r->authorization, options->authorization);
            r->headers = curl_slist_append(r->headers, r->authorization);
        }
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, options->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options->connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, r->errors);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    if (options->ca_file) curl_easy_setopt(curl, CURLOPT_CAINFO, options->ca_file);
    if (options->certificate_file) curl_easy_setopt(curl, CURLOPT_SSLCERT, options->certificate_file);
    if (options->key_file) curl_easy_setopt(curl, CURLOPT_SSLKEY, options->key_file);
    if (options->fresh_connection) {
        curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    }
}

/// Performs the request and fills `response`'s code, status and message; frees what `begin` made.
static int finish(CURL *curl, request *r, vcurl_response *response) {
    CURLcode code = curl_easy_perform(curl);
    response->curl_code = (int)code;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
    if (code != CURLE_OK) {
        const char *message = r->errors[0] ? r->errors : curl_easy_strerror(code);
        strncpy(response->error, message, sizeof(response->error) - 1);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(r->headers);
    if (r->authorization) wipe_free((unsigned char *)r->authorization, strlen(r->authorization));
    return response->curl_code;
}

int vcurl_post_json(void *handle, const char *url, const unsigned char *body, size_t length,
                    const vcurl_options *options, vcurl_response *response) {
    memset(response, 0, sizeof(*response));
    CURL *curl = handle;
    request r;
    begin(curl, &r, url, body, length, options);
    buffer received = {.maximum = options->maximum_body};
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &received);
    finish(curl, &r, response);
    response->truncated = received.truncated;
    response->body = received.bytes;
    response->length = received.length;
    // The caller frees the body with vcurl_response_free, which wipes its length: the rest of the
    // buffer is wiped now.
    if (received.capacity > received.length && received.bytes) {
        volatile unsigned char *p = received.bytes + received.length;
        for (size_t i = 0; i < received.capacity - received.length; i++) p[i] = 0;
    }
    return response->curl_code;
}

void vcurl_response_free(vcurl_response *response) {
    wipe_free(response->body, response->length);
    response->body = NULL;
    response->length = 0;
}

typedef struct stream {
    vcurl_chunk_callback callback;
    void *context;
} stream;

static size_t on_stream_data(char *data, size_t size, size_t count, void *context) {
    stream *s = context;
    size_t n = size * count;
    return s->callback(s->context, (const unsigned char *)data, n) == 0 ? n : 0;
}

static int on_stream_progress(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                              curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    stream *s = context;
    return s->callback(s->context, NULL, 0);
}

int vcurl_stream_json(void *handle, const char *url, const unsigned char *body, size_t length,
                      const vcurl_options *options, vcurl_chunk_callback callback, void *context,
                      vcurl_response *response) {
    memset(response, 0, sizeof(*response));
    CURL *curl = handle;
    request r;
    begin(curl, &r, url, body, length, options);
    stream s = {.callback = callback, .context = context};
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_stream_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &s);
    return finish(curl, &r, response);
}
