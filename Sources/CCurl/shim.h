// libcurl from the system (Debian/Ubuntu: libcurl4-openssl-dev; Fedora: libcurl-devel; Arch:
// curl), for the media cache's HTTP. curl_easy_setopt and curl_easy_getinfo are variadic, which
// Swift cannot call: these typed wrappers can be.
#include <curl/curl.h>

static inline CURLcode playerkit_curl_set_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}

static inline CURLcode playerkit_curl_set_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}

static inline CURLcode playerkit_curl_set_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}

typedef size_t (*playerkit_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*playerkit_curl_progress_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow,
                                                curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode playerkit_curl_set_header_callback(CURL *curl, playerkit_curl_data_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode playerkit_curl_set_write_callback(CURL *curl, playerkit_curl_data_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode playerkit_curl_set_progress_callback(CURL *curl, playerkit_curl_progress_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline long playerkit_curl_response_code(CURL *curl) {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static inline CURLcode playerkit_curl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}
