/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which objects in the shm mount a job may use: those of this user, regular,
 * mode 0600 (as pp_shm_seg_create makes them). Anyone may create objects
 * there: one of another user could change its size or contents at will, so it
 * is never mapped, swept or replaced. Internal to shm/.
 */
#ifndef PP_SHM_SEG_OBJ_H
#define PP_SHM_SEG_OBJ_H

#include <sys/stat.h>
#include <unistd.h>

/* 1 when st describes an object of ours that a segment may be. */
static inline int pp_shm_obj_ours(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && (st->st_mode & 07777) == 0600;
}

#endif
