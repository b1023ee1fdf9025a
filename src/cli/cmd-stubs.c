/* Temporary: commands whose issues are still open. */
#include "cli.h"
#define STUB(fn, what)                                                                             \
	int fn(int argc, char **argv)                                                              \
	{                                                                                          \
		(void)argc;                                                                        \
		(void)argv;                                                                        \
		return cli_error(TALLY_EXIT_ERROR, "%s is not built yet", what);                   \
	}
STUB(cmd_doctor, "doctor")
STUB(cmd_record, "record")
STUB(cmd_env, "env")
