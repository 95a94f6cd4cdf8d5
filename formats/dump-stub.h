/* formats/dump-stub.h: placeholder backends for containers not written
 * yet. Each backend file replaces its use of these macros with the real
 * implementation. */
#ifndef QP_FORMATS_DUMP_STUB_H
#define QP_FORMATS_DUMP_STUB_H

#include "formats/dump.h"

#define QP_DUMP_STUB_READER(sym, fmtname)                                      \
    static enum qp_status sym##_stub_open(struct qp_dump *d,                   \
                                          struct qp_error *err)                \
    {                                                                          \
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': %s dumps are not "        \
                       "supported yet", d->path, fmtname);                     \
    }                                                                          \
    static enum qp_status sym##_stub_load(struct qp_dump *d, size_t i,         \
                                          struct qp_tensor **out,              \
                                          struct qp_error *err)                \
    {                                                                          \
        (void)i;                                                               \
        *out = NULL;                                                           \
        return sym##_stub_open(d, err);                                        \
    }                                                                          \
    const struct qp_dump_ops sym = {fmtname, sym##_stub_open,                  \
                                    sym##_stub_load, NULL}

#define QP_DUMP_STUB_WRITER(sym, fmtname)                                      \
    static enum qp_status sym##_stub_open(struct qp_dump_writer *w,            \
                                          struct qp_error *err)                \
    {                                                                          \
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': writing %s dumps is "     \
                       "not supported yet", w->path, fmtname);                 \
    }                                                                          \
    static enum qp_status sym##_stub_add(struct qp_dump_writer *w,             \
                                         const struct qp_tensor *t,            \
                                         struct qp_error *err)                 \
    {                                                                          \
        (void)t;                                                               \
        return sym##_stub_open(w, err);                                        \
    }                                                                          \
    static void sym##_stub_abort(struct qp_dump_writer *w) { (void)w; }        \
    const struct qp_dump_writer_ops sym = {fmtname, sym##_stub_open,           \
                                           sym##_stub_add, sym##_stub_open,    \
                                           sym##_stub_abort}

#endif
