/*
 * Printing untrusted text: the one place text output escapes what a model
 * or a file chose (graph, node, tensor and file names, string tensors,
 * error messages quoting them). Raw, such a string could carry terminal
 * escape codes (recolour, move the cursor, retitle the window) or a newline
 * followed by a fake verdict line.
 *
 * Escaped: control characters (C0, DEL and the C1 range U+0080-U+009F) as
 * \n, \r, \t or \xHH; bytes that are not valid UTF-8 as \xHH; the Unicode
 * bidirectional controls (U+200E/F, U+202A-E, U+2066-9), which can make
 * text display in another order than it reads, as \uHHHH. Everything else,
 * printable ASCII and valid UTF-8, is kept, so ordinary names print as
 * they are.
 *
 * cg_text_printf is fprintf with every %s and %c argument escaped, so a
 * renderer stays one call per line; it is what every text renderer
 * (src/report, the text parts of src/verify and src/place, cli/) prints with.
 */
#ifndef CG_CORE_TEXT_H
#define CG_CORE_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Writes the escaped form of the len bytes at s into dst (always
 * NUL-terminated when cap > 0, cut at a character boundary when it does not
 * fit); returns the length the whole escaped form needs. */
size_t cg_text_escape(char *dst, size_t cap, const char *s, size_t len);

/* Escaped fputs. */
void cg_text_fputs(const char *s, FILE *f);

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
int cg_text_printf(FILE *f, const char *fmt, ...);

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 0)))
#endif
int cg_text_vprintf(FILE *f, const char *fmt, va_list ap);

#endif
