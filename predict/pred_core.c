/* SPDX-License-Identifier: BSD-3-Clause */
/* The predictor registry, parameters and message ids. */
#include <errno.h>
#include <string.h>

#include "pred_impl.h"
#include "pred_map.h"

const struct pp_pred_ops *const pp_pred_all[] = {
    &pp_pred_single_cycle_ops, &pp_pred_tag_ops,
    &pp_pred_tag_cycle_ops,    &pp_pred_tag_bettercycle_ops,
    &pp_pred_graph_ops,	       &pp_pred_dpd_ops,
    &pp_pred_hybrid_ops,       NULL,
};

const struct pp_pred_ops *pp_pred_find(const char *name)
{
	for (size_t i = 0; pp_pred_all[i]; i++)
		if (strcmp(pp_pred_all[i]->name, name) == 0)
			return pp_pred_all[i];
	return NULL;
}

/* Fill *v with def when zero; -EINVAL when outside [lo, hi]. */
static int param(unsigned *v, unsigned def, unsigned lo, unsigned hi)
{
	if (*v == 0)
		*v = def;
	return *v < lo || *v > hi ? -EINVAL : 0;
}

int pp_pred_params_resolve(struct pp_pred_params *prm)
{
	int rc = 0;
	rc |= param(&prm->max_ahead, 16, 1, PP_PRED_MAX_AHEAD);
	rc |= param(&prm->max_cycle, 1024, 2 * PP_PRED_MIN_FIRST_CYCLE, 1u << 20);
	rc |= param(&prm->max_sites, 256, 1, 1u << 20);
	rc |= param(&prm->max_tag_cycle, 128, 2 * PP_PRED_MIN_FIRST_CYCLE, 1u << 16);
	rc |= param(&prm->max_stored, 16384, 1, 1u << 24);
	rc |= param(&prm->max_states, 4096, 1, 1u << 24);
	rc |= param(&prm->window, 256, 1, 1u << 16);
	rc |= param(&prm->max_period, 256, 1, 1u << 16);
	return rc ? -EINVAL : 0;
}

int pp_pred_create(const char *name, const struct pp_pred_params *prm, struct pp_pred **out)
{
	const struct pp_pred_ops *ops = pp_pred_find(name);
	if (!ops)
		return -ENOENT;
	struct pp_pred_params r = {0};
	if (prm)
		r = *prm;
	int rc = pp_pred_params_resolve(&r);
	if (rc < 0)
		return rc;
	struct pp_pred *p;
	rc = ops->create(&r, &p);
	if (rc < 0)
		return rc;
	p->ops = ops;
	p->max_ahead = r.max_ahead;
	p->want = 0;
	*out = p;
	return 0;
}

uint64_t pp_pred_id(const struct pp_pred_obs *o, unsigned fields)
{
	uint64_t h = pp_pred_mix(fields);
	if (fields & PP_PRED_F_SRC)
		h = pp_pred_mix(h ^ (uint32_t)o->src);
	if (fields & PP_PRED_F_TAG)
		h = pp_pred_mix(h ^ (uint32_t)o->tag);
	if (fields & PP_PRED_F_COMM)
		h = pp_pred_mix(h ^ (uint32_t)o->comm);
	if (fields & PP_PRED_F_BYTES)
		h = pp_pred_mix(h ^ o->bytes);
	if (fields & PP_PRED_F_BUF)
		h = pp_pred_mix(h ^ o->buf);
	if (fields & PP_PRED_F_SITE)
		h = pp_pred_mix(h ^ o->site);
	return h;
}

int pp_pred_key_parse(const char *s, unsigned *fields)
{
	static const struct {
		const char *name; /* field name in a key setting */
		unsigned bit;	  /* its enum pp_pred_field bit */
	} names[] = {
	    {"src", PP_PRED_F_SRC},	{"tag", PP_PRED_F_TAG}, {"comm", PP_PRED_F_COMM},
	    {"bytes", PP_PRED_F_BYTES}, {"buf", PP_PRED_F_BUF}, {"site", PP_PRED_F_SITE},
	};
	if (strcmp(s, "envelope") == 0) {
		*fields = PP_PRED_KEY_ENVELOPE;
		return 0;
	}
	if (strcmp(s, "buf-size-src") == 0) {
		*fields = PP_PRED_KEY_BUF_SIZE_SRC;
		return 0;
	}
	unsigned f = 0;
	const char *p = s;
	for (;;) {
		size_t len = strcspn(p, "+");
		size_t i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == len && strncmp(p, names[i].name, len) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -EINVAL;
		f |= names[i].bit;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	*fields = f;
	return 0;
}
