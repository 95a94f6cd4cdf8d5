/* formats/dump-raw.h: dumps made of raw tensor files (.raw or .bin: the bare
 * bytes, C order, little-endian), the shape of qnn-net-run output folders
 * and similar device dumps. What a file holds is told by, first found:
 *
 *   (b) the index "index.json" (any root *.json with a "tensors" object):
 *         {"qprobe_raw": 1, "metadata": {"k": "v"},
 *          "tensors": {"NAME": {"file": "x.raw", "dtype": "i8",
 *                      "shape": [1, 3], "layout": "NHWC", "scale": [...],
 *                      "zero_point": [...], "axis": 1, "block_size": 0}}}
 *       tensors list in its order; this is what the writer writes;
 *   (a) a sidecar NAME.json beside NAME.raw with the same fields but file;
 *   (c) a QNN / AIMET encodings JSON in the root (*.json or *.encodings,
 *       formats/qnn-encodings.h) whose tensor names match the files' names
 *       (directly or QNN-mangled): it gives scale and zero point
 *       (= -offset) to integer files, and the dtype of qnn-net-run's
 *       "NAME_native.raw" files (--use_native_output_files).
 * Without a stated dtype a file reads as f32: it must then hold exactly
 * the declared shape's f32 bytes (or a whole number of f32 values, 1-D,
 * when no shape is given), else it is refused. Files not in the index are
 * named by their path relative to the folder without the extension (%XX
 * escapes decoded), after a common "Result_N/" folder is dropped (one
 * qnn-net-run input); they list in natural order after the index's.
 * Data is mapped, not copied. */
#ifndef QP_FORMATS_DUMP_RAW_H
#define QP_FORMATS_DUMP_RAW_H

#include "formats/dump.h"

#define QP_RAW_INDEX "index.json"

#endif
