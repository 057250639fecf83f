/* piquant-info.c: `piquant info`: the library version, the CPU and its features
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <string.h>

#include "piquant-tool.h"
#include "piq-cpu-private.h"

/* ---- piquant info ---- */

/* Every CPU feature a kernel unit can require (the one list, piq-cpu-private.h), as
 * the library's own detection sees it: what dispatch decides with. */
static void
print_cpu_features (void)
{
  uint32_t have = piq_cpu_features ();
  g_autoptr(GString) present = g_string_new (NULL);
  g_autoptr(GString) missing = g_string_new (NULL);
  const char *name;

  for (unsigned bit = 0; (name = piq_cpu_feature_name (bit)) != NULL; bit++)
    {
      /* the AArch64 features (NEON and after) on AArch64 only, the x86 ones on x86 */
#if defined(__x86_64__) || defined(__i386__)
      if (bit >= PIQ_CPU_BIT_NEON)
        continue;
#else
      if (bit < PIQ_CPU_BIT_NEON)
        continue;
#endif
      GString *list = (have >> bit) & 1u ? present : missing;
      g_string_append_printf (list, "%s%s", list->len > 0 ? " " : "", name);
    }
  g_print ("CPU features:  %s\n", present->len > 0 ? present->str : "(none that piquant uses)");
  if (missing->len > 0)
    g_print ("not supported: %s\n", missing->str);
}

/* The value of the first "KEY<blanks>: value" line of /proc/cpuinfo, or NULL. */
static char *
find_cpuinfo_value (char **lines, const char *key)
{
  gsize key_len = strlen (key);

  for (char **line = lines; *line != NULL; line++)
    {
      const char *rest = *line + key_len;

      if (strncmp (*line, key, key_len) != 0)
        continue;
      rest += strspn (rest, " \t");
      if (*rest == ':')
        return g_strstrip (g_strdup (rest + 1));
    }
  return NULL;
}

/* The CPU model: "model name" on x86, "Model" on some Arm boards; NULL where
 * there is no /proc/cpuinfo or neither line. */
static char *
get_cpu_model (void)
{
  static const char *const keys[] = { "model name", "Model" };
  g_autofree char *contents = NULL;
  g_auto(GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/cpuinfo", &contents, NULL, NULL))
    return NULL;

  lines = g_strsplit (contents, "\n", -1);
  for (gsize k = 0; k < G_N_ELEMENTS (keys); k++)
    {
      char *model = find_cpuinfo_value (lines, keys[k]);

      if (model != NULL)
        return model;
    }
  return NULL;
}

int
cmd_info (const Command *command, int argc, char **argv)
{
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, NULL, NULL);
  g_autofree char *cpu_model = NULL;
  PiqQuantizer *quantizer;
  gboolean presets = FALSE;
  const GOptionEntry entries[] = {
    { "presets", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &presets,
      "List the format presets that `piquant quantize -p NAME` accepts, one a line", NULL },
    G_OPTION_ENTRY_NULL
  };

  g_option_group_add_entries (group, entries);
  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (presets)
    {
      g_autofree const char **names = piq_format_list_presets ();

      for (const char **name = names; *name != NULL; name++)
        g_print ("%s\n", *name);
      return EXIT_OK;
    }

  cpu_model = get_cpu_model ();
  quantizer = piq_quantizer_get_default ();

  g_print ("piquant:       %s\n", PIQ_VERSION_STRING);
  g_print ("CPU:           %s\n", cpu_model != NULL ? cpu_model : "unknown");
  print_cpu_features ();
  g_print ("SIMD level:    %s\n",
           enum_nick (PIQ_TYPE_SIMD_LEVEL, piq_quantizer_get_simd_level (quantizer)));
  /* n-threads = 0 means one thread per processor GLib counts. */
  g_print ("threads:       %u (n-threads = 0)\n", g_get_num_processors ());
  return EXIT_OK;
}
