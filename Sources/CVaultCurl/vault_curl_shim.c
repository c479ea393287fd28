// libcurl's curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: this file
// makes one POST with fixed options. Bodies may hold tokens or passwords: buffers are wiped before
// they are freed.
//
// libcurl is loaded with dlopen when the first handle is made, not linked: linked, it and the libraries
// it needs (TLS, Kerberos, LDAP, ...: about 30) are loaded and initialised by every process that links
// the vault's library, which cost a C service's first read 7 ms whether it used a fleet group or not.
#include "vault_curl_shim.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The libcurl functions this file calls, from libcurl.so.4. A request also needs libcurl 7.85 or later
/// (CURLOPT_PROTOCOLS_STR): an older one refuses the option, and then the request is not sent.
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *curl);
    void (*easy_reset)(CURL *curl);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *curl);
    CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[512];

static int bind_function(void *library, const char *name, void **function) {
    *function = dlsym(library, name);
    if (*function == NULL) snprintf(load_error, sizeof(load_error), "libcurl.so.4 has no %s", name);
    return *function != NULL;
}

static void load(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof(load_error), "%s (fleet groups need libcurl: Debian's libcurl4)",
                 reason ? reason : "libcurl.so.4 cannot be loaded");
        return;
    }
    int bound = bind_function(library, "curl_global_init", (void **)&api.global_init) &&
                bind_function(library, "curl_easy_init", (void **)&api.easy_init) &&
                bind_function(library, "curl_easy_cleanup", (void **)&api.easy_cleanup) &&
                bind_function(library, "curl_easy_reset", (void **)&api.easy_reset) &&
                bind_function(library, "curl_easy_setopt", (void **)&api.easy_setopt) &&
                bind_function(library, "curl_easy_perform", (void **)&api.easy_perform) &&
                bind_function(library, "curl_easy_getinfo", (void **)&api.easy_getinfo) &&
                bind_function(library, "curl_easy_strerror", (void **)&api.easy_strerror) &&
                bind_function(library, "curl_slist_append", (void **)&api.slist_append) &&
                bind_function(library, "curl_slist_free_all", (void **)&api.slist_free_all);
    if (!bound) return;  // the library stays loaded: nothing else may use a half-bound table
    CURLcode code = api.global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
        snprintf(load_error, sizeof(load_error), "curl_global_init: %s", api.easy_strerror(code));
        return;
    }
    loaded = 1;
}

const char *vcurl_load_error(void) {
    pthread_once(&load_once, load);
    return loaded ? NULL : load_error;
}

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
    pthread_once(&load_once, load);
    return loaded ? api.easy_init() : NULL;
}

void vcurl_handle_free(void *handle) {
    if (handle) api.easy_cleanup(handle);
}

/// What one request holds until it is done: its headers, the Authorization line (wiped at the end)
/// and curl's error text.
typedef struct request {
    struct curl_slist *headers;
    char *authorization;
    char errors[CURL_ERROR_SIZE];
    /// Why the request must not be sent (an option that limits it was refused), or CURLE_OK.
    CURLcode refused;
} request;

/// The options every request has: the URL, http or https only, no redirect, never a proxy from the
/// environment (etcd endpoints are addressed directly), the JSON body, time limits and TLS files.
static void begin(CURL *curl, request *r, const char *url, const unsigned char *body, size_t length,
                  const vcurl_options *options) {
    api.easy_reset(curl);
    memset(r, 0, sizeof(*r));
    r->headers = api.slist_append(NULL, "Content-Type: application/json");
    if (options->authorization) {
        size_t n = strlen(options->authorization) + sizeof("Authorization: ");
        r->authorization = malloc(n);
        if (r->authorization) {
            strcpy(r->authorization, "Authorization: ");
            strcat(r->authorization, options->authorization);
            r->headers = api.slist_append(r->headers, r->authorization);
        }
    }
    api.easy_setopt(curl, CURLOPT_URL, url);
    r->refused = api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    api.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    api.easy_setopt(curl, CURLOPT_NOPROXY, "*");
    api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(curl, CURLOPT_POST, 1L);
    api.easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *)body);
    api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
    api.easy_setopt(curl, CURLOPT_HTTPHEADER, r->headers);
    api.easy_setopt(curl, CURLOPT_TIMEOUT_MS, options->timeout_ms);
    api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options->connect_timeout_ms);
    api.easy_setopt(curl, CURLOPT_ERRORBUFFER, r->errors);
    api.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    api.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    if (options->ca_file) api.easy_setopt(curl, CURLOPT_CAINFO, options->ca_file);
    if (options->certificate_file) api.easy_setopt(curl, CURLOPT_SSLCERT, options->certificate_file);
    if (options->key_file) api.easy_setopt(curl, CURLOPT_SSLKEY, options->key_file);
    if (options->fresh_connection) {
        api.easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
        api.easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
    }
}

/// Performs the request and fills `response`'s code, status and message; frees what `begin` made.
static int finish(CURL *curl, request *r, vcurl_response *response) {
    if (r->refused != CURLE_OK) {
        response->curl_code = (int)r->refused;
        strncpy(response->error,
                "this libcurl cannot limit requests to http and https (libcurl 7.85 or later is "
                "needed); nothing was sent",
                sizeof(response->error) - 1);
    } else {
        CURLcode code = api.easy_perform(curl);
        response->curl_code = (int)code;
        api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
        if (code != CURLE_OK) {
            const char *message = r->errors[0] ? r->errors : api.easy_strerror(code);
            strncpy(response->error, message, sizeof(response->error) - 1);
        }
    }
    api.easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
    api.easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    api.slist_free_all(r->headers);
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
    api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    api.easy_setopt(curl, CURLOPT_WRITEDATA, &received);
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
    api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream_data);
    api.easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    api.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    api.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_stream_progress);
    api.easy_setopt(curl, CURLOPT_XFERINFODATA, &s);
    return finish(curl, &r, response);
}
