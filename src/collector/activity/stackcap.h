/* SPDX-License-Identifier: MIT */
/* Stacks captured on launching calls: the CUPTI side; see stackcap.c. */
#ifndef TALLY_COLLECTOR_STACKCAP_H
#define TALLY_COLLECTOR_STACKCAP_H

#include <cupti.h>
#include <stdbool.h>

#include "config.h"

/* With a CUPTI subscriber: enable the launch calls' callbacks if stacks were asked for. */
void tally_stackcap_subscribe(CUpti_SubscriberHandle sub, const struct tally_config *cfg);

/* From the subscriber's callback: true if the call was one of ours (handled). */
bool tally_stackcap_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			     const CUpti_CallbackData *api);

#endif
