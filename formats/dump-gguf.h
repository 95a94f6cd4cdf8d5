/* formats/dump-gguf.h: a GGUF file as a dump (reader and writer backends
 * in formats/dump-gguf.c; the file format in formats/gguf.h). */
#ifndef QP_FORMATS_DUMP_GGUF_H
#define QP_FORMATS_DUMP_GGUF_H

#include "core/ggml-block.h"
#include "formats/dump.h"

/* Adds a tensor already in a ggml type (blocks from qp_ggml_quantize_tensor,
 * quant/ggml-quant.h) to a GGUF dump writer (format QP_DUMP_GGUF; another
 * format is QP_E_INVAL). d is copied (spooled) before returning. Errors as
 * qp_dump_writer_add: names taken twice, shapes GGUF cannot hold. */
enum qp_status qp_dump_gguf_add_ggml(struct qp_dump_writer *w, const char *name,
                                     const struct qp_ggml_data *d,
                                     struct qp_error *err);

#endif
