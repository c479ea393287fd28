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

int vcurl_post_json(void *handle, const char *url, const unsigned char *body, size_t length,
                    const vcurl_options *options, vcurl_response *response) {
    memset(response, 0, sizeof(*response));
    CURL *curl = handle;
    curl_easy_reset(curl);
    buffer received = {.maximum = options->maximum_body};
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    char *authorization = NULL;
    if (options->authorization) {
        size_t n = strlen(options->authorization) + sizeof("Authorization: ");
        authorization = malloc(n);
        if (authorization) {
            strcpy(authorization, "Authorization: ");
            strcat(authorization, options->authorization);
            headers = curl_slist_append(headers, authorization);
        }
    }
    char errors[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    // Never a proxy from the environment: etcd endpoints are addressed directly.
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, options->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options->connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &received);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errors);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    if (options->ca_file) curl_easy_setopt(curl, CURLOPT_CAINFO, options->ca_file);
    if (options->certificate_file) curl_easy_setopt(curl, CURLOPT_SSLCERT, options->certificate_file);
    if (options->key_file) curl_easy_setopt(curl, CURLOPT_SSLKEY, options->key_file);
    if (options->fresh_connection) {
        curl_easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    }

    CURLcode code = curl_easy_perform(curl);
    response->curl_code = (int)code;
    if (code == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
    } else {
        const char *message = errors[0] ? errors : curl_easy_strerror(code);
        strncpy(response->error, message, sizeof(response->error) - 1);
    }
    response->truncated = received.truncated;
    response->body = received.bytes;
    response->length = received.length;
    // The caller frees the body with vcurl_response_free; its capacity is at least its length.
    if (received.capacity > received.length && received.bytes) {
        volatile unsigned char *p = received.bytes + received.length;
        for (size_t i = 0; i < received.capacity - received.length; i++) p[i] = 0;
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    if (authorization) wipe_free((unsigned char *)authorization, strlen(authorization));
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
    curl_easy_reset(curl);
    stream s = {.callback = callback, .context = context};
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    char *authorization = NULL;
    if (options->authorization) {
        size_t n = strlen(options->authorization) + sizeof("Authorization: ");
        authorization = malloc(n);
        if (authorization) {
            strcpy(authorization, "Authorization: ");
            strcat(authorization, options->authorization);
            headers = curl_slist_append(headers, authorization);
        }
    }
    char errors[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, options->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options->connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_stream_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errors);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    if (options->ca_file) curl_easy_setopt(curl, CURLOPT_CAINFO, options->ca_file);
    if (options->certificate_file) curl_easy_setopt(curl, CURLOPT_SSLCERT, options->certificate_file);
    if (options->key_file) curl_easy_setopt(curl, CURLOPT_SSLKEY, options->key_file);

    CURLcode code = curl_easy_perform(curl);
    response->curl_code = (int)code;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
    if (code != CURLE_OK) {
        const char *message = errors[0] ? errors : curl_easy_strerror(code);
        strncpy(response->error, message, sizeof(response->error) - 1);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    if (authorization) wipe_free((unsigned char *)authorization, strlen(authorization));
    return response->curl_code;
}
