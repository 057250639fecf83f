/* piquant.c: the piquant command-line tool
 *
 * `piquant <command> [options]`; each command has its own GOptionContext, so
 * `piquant --help` lists the commands and `piquant <command> --help` lists
 * that command's options.
 *
 * Exit status: 0 on success, 1 when the library or a file reports an error
 * (missing, unreadable, malformed, too short), 2 for a usage error (unknown
 * command or option, bad value, an option that a file turns out to need).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <locale.h>
#include <string.h>

#include "piquant-tool.h"

/* ---- the command table and main ---- */

static int cmd_help (const Command *command, int argc, char **argv);

static const Command commands[] = {
  { .name = "info", .run = cmd_info,
    .summary = "Show the library version, the CPU, its SIMD features and the kernels in use" },
  { .name = "demo", .run = cmd_demo,
    .summary = "Quantize normally distributed data to the integer types and the format presets; "
               "report speed and error",
    .description = "The default tensor (109 MB) shows memory-bound speeds and takes a while;\n"
                   "for a short run, give fewer elements: piquant demo --elements 1000000" },
  { .name = "bench", .run = cmd_bench,
    .summary = "Time the hot kernels against this machine's memory limit for their byte mix" },
  { .name = "quantize", .run = cmd_quantize, .arguments = "INPUT OUTPUT", .max_arguments = 2,
    .summary = "Quantize a .npy or raw float file into a piquant container (.piqt)" },
  { .name = "dequantize", .run = cmd_dequantize, .arguments = "INPUT OUTPUT", .max_arguments = 2,
    .summary = "Dequantize a piquant container (.piqt) into a .npy or raw float file" },
  { .name = "inspect", .run = cmd_inspect, .arguments = "FILE", .max_arguments = 1,
    .summary = "Print the header of a .npy or .piqt file: type, shape, sizes and every key" },
  { .name = "help", .run = cmd_help, .arguments = "[COMMAND]", .max_arguments = 1,
    .summary = "Show the help of the tool or of a command" },
};

static const Command *
find_command (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static GOptionContext *
new_main_context (gboolean *show_version)
{
  const GOptionEntry entries[] = {
    { "version", 'V', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, show_version,
      "Show the version of piquant", NULL },
    G_OPTION_ENTRY_NULL
  };
  GOptionContext *context = g_option_context_new ("COMMAND [OPTION…]");
  g_autoptr(GString) description = g_string_new ("Commands:\n");
  int width = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    width = MAX (width, (int) strlen (commands[i].name));
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    g_string_append_printf (description, "  %-*s  %s\n", width, commands[i].name, commands[i].summary);
  g_string_append (description, "\nRun 'piquant COMMAND --help' for the options of a command.\n");

  g_option_context_set_summary (context,
                                "CPU quantization kernels: information, demonstrations and "
                                "file conversion.");
  g_option_context_set_description (context, description->str);
  g_option_context_add_main_entries (context, entries, NULL);
  /* Stop at the command: its options belong to its own context. */
  g_option_context_set_strict_posix (context, TRUE);
  return context;
}

static void
print_main_help (void)
{
  gboolean unused;
  g_autoptr(GOptionContext) context = new_main_context (&unused);
  g_autofree char *help = NULL;

  /* `piquant help` runs as "piquant help"; the usage line is the tool's. */
  g_set_prgname ("piquant");
  help = g_option_context_get_help (context, TRUE, NULL);
  g_print ("%s", help);
}

/* `piquant help [COMMAND]`: the same text as `piquant [COMMAND] --help`. */
static int
cmd_help (const Command *command, int argc, char **argv)
{
  GOptionGroup *group = g_option_group_new (command->name, command->summary, NULL, NULL, NULL);
  const Command *topic;
  char *help_argv[] = { NULL, (char *) "--help", NULL };

  if (!parse_command_options (command, group, &argc, &argv))
    return EXIT_USAGE;
  if (argc < 2)
    {
      print_main_help ();
      return EXIT_OK;
    }

  topic = find_command (argv[1]);
  if (topic == NULL)
    return usage_error ("piquant", "unknown command '%s'", argv[1]);
  help_argv[0] = argv[1];
  return topic->run (topic, G_N_ELEMENTS (help_argv) - 1, help_argv);
}

int
main (int argc, char **argv)
{
  gboolean show_version = FALSE;
  g_autoptr(GOptionContext) context = new_main_context (&show_version);
  g_autoptr(GError) error = NULL;
  const Command *command;

  /* The locale's charset for messages and help; numbers keep the C format so
   * that the tables read the same everywhere and parse as numbers. */
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  g_set_prgname ("piquant");
  if (!g_option_context_parse (context, &argc, &argv, &error))
    return usage_error ("piquant", "%s", error->message);
  if (show_version)
    {
      g_print ("piquant %s\n", PIQ_VERSION_STRING);
      return EXIT_OK;
    }
  if (argc < 2)
    return usage_error ("piquant", "no command given");

  command = find_command (argv[1]);
  if (command == NULL)
    return usage_error ("piquant", "unknown command '%s'", argv[1]);
  return command->run (command, argc - 1, argv + 1);
}
