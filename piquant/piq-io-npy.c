/* piq-io-npy.c: the .npy header, read and written as numpy does
 *
 * A .npy file is: the magic "\x93NUMPY", a major and a minor version byte, the
 * header length (little-endian u16 in version 1.0, u32 in 2.0 and 3.0), the
 * header — a Python dict literal with the keys 'descr', 'fortran_order' and
 * 'shape', padded with spaces and ended by '\n' — and then the raw elements.
 * Version 3.0 only differs by allowing UTF-8 in the header.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <string.h>

#include "piq-io-npy-private.h"

/* Headers longer than this are refused unread: numpy writes a few hundred
 * bytes, and its reader stops at 10000 unless told otherwise. */
#define NPY_MAX_HEADER_LEN (1u << 20)

/* numpy.lib.format: data starts at a multiple of ARRAY_ALIGN, and the header
 * keeps room for the first axis to grow to GROWTH_AXIS_MAX_DIGITS digits. */
#define NPY_ARRAY_ALIGN            64
#define NPY_GROWTH_AXIS_MAX_DIGITS 21

gboolean
piq_npy_has_magic (const guint8 *bytes,
                   gsize         n_bytes)
{
  return n_bytes >= PIQ_NPY_MAGIC_LEN && memcmp (bytes, PIQ_NPY_MAGIC, PIQ_NPY_MAGIC_LEN) == 0;
}

/* ---- the dict literal ---- */

typedef struct {
  const char *p;
  const char *end;
} Scanner;

static void
skip_space (Scanner *s)
{
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

static gboolean
accept_char (Scanner *s, char c)
{
  skip_space (s);
  if (s->p < s->end && *s->p == c)
    {
      s->p++;
      return TRUE;
    }
  return FALSE;
}

static gboolean
accept_word (Scanner *s, const char *word)
{
  gsize n = strlen (word);

  skip_space (s);
  if ((gsize) (s->end - s->p) >= n && memcmp (s->p, word, n) == 0)
    {
      s->p += n;
      return TRUE;
    }
  return FALSE;
}

/* A Python string literal in ' or " without escapes (numpy writes none in
 * the keys and descrs piquant accepts). NULL when there is none. */
static char *
scan_string (Scanner *s)
{
  const char *start;
  char quote;

  skip_space (s);
  if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
    return NULL;
  quote = *s->p++;
  start = s->p;
  while (s->p < s->end && *s->p != quote && *s->p != '\\')
    s->p++;
  if (s->p >= s->end || *s->p != quote)
    return NULL;
  s->p++;
  return g_strndup (start, s->p - 1 - start);
}

/* A non-negative decimal integer; Python 2's numpy wrote a trailing 'L'. */
static gboolean
scan_integer (Scanner *s, guint64 *value)
{
  guint64 v = 0;
  const char *start;

  skip_space (s);
  start = s->p;
  while (s->p < s->end && g_ascii_isdigit (*s->p))
    {
      if (!g_uint64_checked_mul (&v, v, 10) || !g_uint64_checked_add (&v, v, *s->p - '0'))
        return FALSE;
      s->p++;
    }
  if (s->p == start)
    return FALSE;
  if (s->p < s->end && *s->p == 'L')
    s->p++;
  *value = v;
  return TRUE;
}

/* "()", "(5,)", "(2, 3)", "(2, 3,)". */
static gboolean
scan_shape (Scanner *s, PiqNpyHeader *header, GError **error)
{
  header->n_dims = 0;
  if (!accept_char (s, '('))
    goto bad;
  if (accept_char (s, ')'))
    return TRUE;
  for (;;)
    {
      guint64 extent;

      if (!scan_integer (s, &extent))
        goto bad;
      if (header->n_dims == PIQ_NPY_MAX_DIMS)
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "the shape has more than %d dimensions", PIQ_NPY_MAX_DIMS);
          return FALSE;
        }
      header->shape[header->n_dims++] = extent;
      if (accept_char (s, ')'))
        break;
      if (!accept_char (s, ','))
        goto bad;
      if (accept_char (s, ')'))
        break;
    }
  /* "(5)" is the integer 5 in Python, not a tuple. */
  return TRUE;

bad:
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
               "the header's 'shape' is not a tuple of whole numbers");
  return FALSE;
}

/* The element type of @descr, or an error that says why piquant cannot use it. */
static gboolean
interpret_descr (const char *descr, PiqDtype *dtype, GError **error)
{
  static const struct {
    const char *type;
    PiqDtype    dtype;
  } types[] = {
    { "f4", PIQ_DTYPE_F32 },
    { "f8", PIQ_DTYPE_F64 },
    { "f2", PIQ_DTYPE_F16 },
    { "u1", PIQ_DTYPE_UINT8 },
    { "i1", PIQ_DTYPE_INT8 },
    { "u2", PIQ_DTYPE_UINT16 },
    { "i2", PIQ_DTYPE_INT16 },
    { "u4", PIQ_DTYPE_UINT32 },
    { "i4", PIQ_DTYPE_INT32 },
    { "u8", PIQ_DTYPE_UINT64 },
    { "i8", PIQ_DTYPE_INT64 },
  };
  char order = descr[0];
  const char *type = descr[0] != '\0' ? descr + 1 : descr;

  for (gsize i = 0; i < G_N_ELEMENTS (types); i++)
    {
      if (strcmp (type, types[i].type) != 0)
        continue;
      /* numpy writes '|' (not applicable) for one-byte types. */
      if (order == '<' || order == '=' || (order == '|' && type[1] == '1'))
        {
          *dtype = types[i].dtype;
          return TRUE;
        }
      if (order == '>')
        {
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                       "big-endian data ('%s') is not supported; convert it with "
                       "numpy: a.astype('<%s')", descr, type);
          return FALSE;
        }
      break;
    }

  if (strcmp (type, "O") == 0)
    g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                 "object arrays (pickled Python objects) are not supported");
  else
    g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                 "dtype '%s' is not supported: piquant reads '<f4' (f32), '<f8' (f64), "
                 "'<f2' (f16; bf16 travels as '<u2') and the integers '|u1', '|i1', "
                 "'<u2', '<i2', '<u4', '<i4', '<u8' and '<i8'", descr);
  return FALSE;
}

gboolean
piq_npy_parse_dict (const char    *text,
                    gsize          length,
                    PiqNpyHeader  *header,
                    GError       **error)
{
  Scanner s = { text, text + length };
  gboolean have_descr = FALSE, have_order = FALSE, have_shape = FALSE;
  gboolean fortran_order = FALSE;

  /* numpy parses the header with ast.literal_eval, which refuses a NUL byte
   * anywhere ("source code string cannot contain null bytes"); the C strings
   * below would otherwise end at it, and '<f4\0' would read as '<f4'. */
  if (memchr (text, '\0', length) != NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                   "the header contains a NUL byte");
      return FALSE;
    }
  if (!accept_char (&s, '{'))
    goto bad;
  while (!accept_char (&s, '}'))
    {
      g_autofree char *key = scan_string (&s);

      if (key == NULL || !accept_char (&s, ':'))
        goto bad;
      if (strcmp (key, "descr") == 0 && !have_descr)
        {
          g_autofree char *descr = NULL;

          skip_space (&s);
          if (s.p < s.end && *s.p == '[')
            {
              g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                           "structured dtypes (records) are not supported");
              return FALSE;
            }
          descr = scan_string (&s);
          if (descr == NULL || strlen (descr) >= sizeof header->descr)
            goto bad;
          strcpy (header->descr, descr);
          have_descr = TRUE;
        }
      else if (strcmp (key, "fortran_order") == 0 && !have_order)
        {
          if (accept_word (&s, "True"))
            fortran_order = TRUE;
          else if (accept_word (&s, "False"))
            fortran_order = FALSE;
          else
            goto bad;
          have_order = TRUE;
        }
      else if (strcmp (key, "shape") == 0 && !have_shape)
        {
          if (!scan_shape (&s, header, error))
            return FALSE;
          have_shape = TRUE;
        }
      else
        {
          /* numpy refuses other keys too, and repeated ones. */
          g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                       "unexpected key '%s' in the header", key);
          return FALSE;
        }
      if (!accept_char (&s, ',') && !(skip_space (&s), s.p < s.end && *s.p == '}'))
        goto bad;
    }
  skip_space (&s);
  if (s.p != s.end)
    goto bad;
  if (!have_descr || !have_order || !have_shape)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                   "the header has no '%s'",
                   !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
      return FALSE;
    }

  if (!interpret_descr (header->descr, &header->dtype, error))
    return FALSE;
  /* One dimension or none: both orders are the same bytes. */
  if (fortran_order && header->n_dims > 1)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "Fortran-order (column-major) arrays are not supported; save a "
                   "C-order copy (numpy.ascontiguousarray)");
      return FALSE;
    }
  header->n_elements = 1;
  for (guint i = 0; i < header->n_dims; i++)
    if (!g_uint64_checked_mul (&header->n_elements, header->n_elements, header->shape[i]))
      {
        g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                     "the shape's element count overflows 64 bits");
        return FALSE;
      }
  return TRUE;

bad:
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
               "the header is not a dict of 'descr', 'fortran_order' and 'shape'");
  return FALSE;
}

/* ---- reading ---- */

/* Reads exactly @n bytes, or says why not: the reader's own error, or the
 * file ending inside @what. */
static gboolean
read_exact (PiqReadFunc read, void *source, void *buffer, gsize n, const char *name,
            const char *what, GError **error)
{
  gsize got = 0;

  if (!read (source, buffer, n, &got, error))
    {
      g_prefix_error (error, "%s: ", name);
      return FALSE;
    }
  if (got == n)
    return TRUE;
  g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT, "%s: the file ends inside %s", name, what);
  return FALSE;
}

gboolean
piq_npy_read_header_from (PiqReadFunc    read,
                          void          *source,
                          const char    *name,
                          PiqNpyHeader  *header,
                          GError       **error)
{
  guint8 preamble[PIQ_NPY_MAGIC_LEN + 2];
  guint8 size_bytes[4];
  gsize size_len;
  guint32 header_len;
  g_autofree char *text = NULL;
  g_autoptr(GError) local_error = NULL;

  memset (header, 0, sizeof *header);
  if (!read_exact (read, source, preamble, sizeof preamble, name, "the .npy magic", error))
    return FALSE;
  if (!piq_npy_has_magic (preamble, sizeof preamble))
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                   "%s is not a .npy file (it does not start with \\x93NUMPY)", name);
      return FALSE;
    }
  header->major = preamble[PIQ_NPY_MAGIC_LEN];
  header->minor = preamble[PIQ_NPY_MAGIC_LEN + 1];
  if (header->minor != 0 || header->major < 1 || header->major > 3)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_UNSUPPORTED,
                   "%s: .npy format version %u.%u is not supported (only 1.0, 2.0 and 3.0)",
                   name, header->major, header->minor);
      return FALSE;
    }

  size_len = header->major == 1 ? 2 : 4;
  if (!read_exact (read, source, size_bytes, size_len, name, "the .npy preamble", error))
    return FALSE;
  header_len = size_bytes[0] | (guint32) size_bytes[1] << 8;
  if (size_len == 4)
    header_len |= (guint32) size_bytes[2] << 16 | (guint32) size_bytes[3] << 24;
  if (header_len > NPY_MAX_HEADER_LEN)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_FILE_FORMAT,
                   "%s: the .npy header claims %u bytes, more than the %u accepted",
                   name, header_len, NPY_MAX_HEADER_LEN);
      return FALSE;
    }

  text = g_try_malloc (header_len + 1);
  if (text == NULL)
    {
      g_set_error (error, PIQ_ERROR, PIQ_ERROR_NO_MEMORY, "%s: cannot allocate %u bytes for "
                   "the .npy header", name, header_len + 1);
      return FALSE;
    }
  if (!read_exact (read, source, text, header_len, name, "the .npy header", error))
    return FALSE;
  text[header_len] = '\0';
  if (!piq_npy_parse_dict (text, header_len, header, &local_error))
    {
      g_set_error (error, local_error->domain, local_error->code, "%s: %s", name,
                   local_error->message);
      return FALSE;
    }
  header->data_offset = PIQ_NPY_MAGIC_LEN + 2 + size_len + header_len;
  return TRUE;
}

static gboolean
read_file (void *source, void *buffer, gsize n, gsize *n_read, GError **error)
{
  FILE *file = source;

  *n_read = fread (buffer, 1, n, file);
  if (*n_read == n || !ferror (file))
    return TRUE;
  g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "cannot read: %s",
               g_strerror (errno));
  return FALSE;
}

gboolean
piq_npy_read_header (FILE          *file,
                     const char    *name,
                     PiqNpyHeader  *header,
                     GError       **error)
{
  return piq_npy_read_header_from (read_file, file, name, header, error);
}

/* ---- writing ---- */

const char *
piq_npy_descr_for_dtype (PiqDtype dtype)
{
  switch (dtype)
    {
    case PIQ_DTYPE_F32:    return "<f4";
    case PIQ_DTYPE_F64:    return "<f8";
    case PIQ_DTYPE_F16:    return "<f2";
    case PIQ_DTYPE_BF16:   return "<u2";
    case PIQ_DTYPE_UINT8:  return "|u1";
    case PIQ_DTYPE_INT8:   return "|i1";
    case PIQ_DTYPE_UINT16: return "<u2";
    case PIQ_DTYPE_INT16:  return "<i2";
    case PIQ_DTYPE_UINT32: return "<u4";
    case PIQ_DTYPE_INT32:  return "<i4";
    case PIQ_DTYPE_UINT64: return "<u8";
    case PIQ_DTYPE_INT64:  return "<i8";
    default:               return NULL;
    }
}

guint8 *
piq_npy_format_header (const char    *descr,
                       const guint64 *shape,
                       guint          n_dims,
                       gsize         *length)
{
  g_autoptr(GString) dict = g_string_new (NULL);
  g_autoptr(GByteArray) out = g_byte_array_new ();
  gsize prefix_len, header_len, pad_len;
  guint8 major;

  /* repr() of the sorted dict, as numpy.lib.format._write_array_header. */
  g_string_append_printf (dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (guint i = 0; i < n_dims; i++)
    g_string_append_printf (dict, "%s%" G_GUINT64_FORMAT, i > 0 ? ", " : "", shape[i]);
  g_string_append (dict, n_dims == 1 ? ",), }" : "), }");
  if (n_dims > 0)
    {
      g_autofree char *first = g_strdup_printf ("%" G_GUINT64_FORMAT, shape[0]);
      gsize digits = strlen (first);

      for (gsize i = digits; i < NPY_GROWTH_AXIS_MAX_DIGITS; i++)
        g_string_append_c (dict, ' ');
    }

  /* Version 1.0 unless the length does not fit its u16 (then 2.0); the
   * padding is 1 to 64 spaces, then '\n', as numpy's _wrap_header. */
  major = 1;
  prefix_len = PIQ_NPY_MAGIC_LEN + 2 + 2;
  pad_len = NPY_ARRAY_ALIGN - (prefix_len + dict->len + 1) % NPY_ARRAY_ALIGN;
  header_len = dict->len + 1 + pad_len;
  if (header_len > G_MAXUINT16)
    {
      major = 2;
      prefix_len = PIQ_NPY_MAGIC_LEN + 2 + 4;
      pad_len = NPY_ARRAY_ALIGN - (prefix_len + dict->len + 1) % NPY_ARRAY_ALIGN;
      header_len = dict->len + 1 + pad_len;
    }

  g_byte_array_append (out, (const guint8 *) PIQ_NPY_MAGIC, PIQ_NPY_MAGIC_LEN);
  g_byte_array_append (out, (const guint8[]) { major, 0 }, 2);
  for (gsize i = 0; i < prefix_len - PIQ_NPY_MAGIC_LEN - 2; i++)
    g_byte_array_append (out, (const guint8[]) { (guint8) (header_len >> (8 * i)) }, 1);
  g_byte_array_append (out, (const guint8 *) dict->str, dict->len);
  for (gsize i = 0; i < pad_len; i++)
    g_byte_array_append (out, (const guint8 *) " ", 1);
  g_byte_array_append (out, (const guint8 *) "\n", 1);

  g_assert (out->len % NPY_ARRAY_ALIGN == 0);
  *length = out->len;
  return g_byte_array_free (g_steal_pointer (&out), FALSE);
}
