#ifndef AUTHGATE_CHIREDIS_SHIM_H
#define AUTHGATE_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>

/* hiredis 0.14 allocates an array reply's element table as soon as it reads the header: a reply
   announcing `*999999992` asks calloc for 8 GB before one element has arrived (found by
   FuzzRESP). AuthGate's readers refuse an aggregate of more than this many elements instead: the
   reader fails with an out-of-memory error, which the connection reports as a protocol error.
   (State lives in function-local statics: Swift emits this header's functions, not its globals.) */
#define AUTHGATE_MAX_AGGREGATE_ELEMENTS (1 << 20)

/* hiredis's own createArray, saved by the first reader made (the same for every reader). */
static inline void *(**authgate_default_create_array(void))(const redisReadTask *, int) {
    static void *(*original)(const redisReadTask *, int) = NULL;
    return &original;
}

static inline void *authgate_create_array(const redisReadTask *task, int elements) {
    if (elements < 0 || elements > AUTHGATE_MAX_AGGREGATE_ELEMENTS) return NULL;
    return (*authgate_default_create_array())(task, elements);
}

/* redisReaderCreate, with the aggregate limit above: each reader gets its own copy of hiredis's
   functions with createArray wrapped. */
static inline redisReader *authgate_reader_create(void) {
    redisReader *reader = redisReaderCreate();
    if (reader == NULL || reader->fn == NULL) return reader;
    redisReplyObjectFunctions *functions = (redisReplyObjectFunctions *)malloc(sizeof(redisReplyObjectFunctions));
    if (functions == NULL) { redisReaderFree(reader); return NULL; }
    *functions = *reader->fn;
    if (functions->createArray != authgate_create_array) *authgate_default_create_array() = functions->createArray;
    functions->createArray = authgate_create_array;
    reader->fn = functions;
    return reader;
}

/* Frees a reader made by authgate_reader_create. */
static inline void authgate_reader_free(redisReader *reader) {
    redisReplyObjectFunctions *functions = reader->fn;
    redisReaderFree(reader);
    free(functions);
}

#endif
