/* SPDX-License-Identifier: MIT */
#include "cli.h"
int cmd_control(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return TALLY_EXIT_USAGE;
}
