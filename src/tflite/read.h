/* Internal interface between the .tflite reader's files. */
#ifndef CG_TFLITE_READ_H
#define CG_TFLITE_READ_H

#include "convgate/tflite.h"
#include "tflite/fb.h"

/* Verifies and decodes Operator.builtin_options (fields 3, 4) into o and
 * verifies builtin_options_2 (fields 11, 12), storing its type. */
bool cg_tflite_read_options(fb_reader *r, const fb_table *op, cg_tflite_options *o,
                            int *options2_type);

#endif
