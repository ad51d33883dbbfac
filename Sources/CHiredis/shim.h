#ifndef AUTHGATE_CHIREDIS_SHIM_H
#define AUTHGATE_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>

/* hiredis 0.14 allocates an array reply's element table as soon as it reads the header: a reply
   announcing `*999999992` asks calloc for 8 GB before one element has arrived (found by
   FuzzRESP). AuthGate's readers refuse an aggregate of more than this many elements instead: the
   reader fails with an out-of-memory error, which the connection reports as a protocol error. */
#define AUTHGATE_MAX_AGGREGATE_ELEMENTS (1 << 20)

/* A reader's reply functions: hiredis's, with createArray wrapped, and hiredis's own createArray.
   Each reader has its own copy, found through the reader's privdata, which hiredis hands to every
   read task (no global state: readers made at once on different threads share nothing). */
typedef struct {
    redisReplyObjectFunctions functions; /* first: reader->fn points here */
    void *(*createArray)(const redisReadTask *, int);
} authgate_reader_functions;

static inline void *authgate_create_array(const redisReadTask *task, int elements) {
    if (elements < 0 || elements > AUTHGATE_MAX_AGGREGATE_ELEMENTS) return NULL;
    const authgate_reader_functions *own = (const authgate_reader_functions *)task->privdata;
    if (own == NULL || own->createArray == NULL) return NULL;
    return own->createArray(task, elements);
}

/* redisReaderCreate, with the aggregate limit above. */
static inline redisReader *authgate_reader_create(void) {
    redisReader *reader = redisReaderCreate();
    if (reader == NULL || reader->fn == NULL) return reader;
    authgate_reader_functions *own = (authgate_reader_functions *)malloc(sizeof(authgate_reader_functions));
    if (own == NULL) { redisReaderFree(reader); return NULL; }
    own->functions = *reader->fn;
    own->createArray = reader->fn->createArray;
    own->functions.createArray = authgate_create_array;
    reader->fn = &own->functions;
    reader->privdata = own;
    return reader;
}

/* Frees a reader made by authgate_reader_create. */
static inline void authgate_reader_free(redisReader *reader) {
    void *own = reader->privdata;
    redisReaderFree(reader);
    free(own);
}

#endif
