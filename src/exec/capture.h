/*
 * A run's output, bounded: the first and the last `cap` bytes of whatever
 * it wrote, with a "[... N bytes omitted ...]" marker between, turned into
 * text (NUL and invalid UTF-8 bytes as '?').  The shell executor feeds it
 * a child's pipe, the HTTP executor a response body.  One capture belongs
 * to one run; nothing is shared.
 */
#ifndef DBCRON_EXEC_CAPTURE_H
#define DBCRON_EXEC_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct exec_capture {
	size_t cap;        /* bytes kept at each end */
	char *head;
	size_t head_len;
	char *tail;        /* ring of cap bytes */
	size_t tail_next;  /* where the next tail byte goes */
	size_t tail_len;   /* valid bytes in the ring, <= cap */
	uint64_t total;    /* bytes fed */
} exec_capture;

/* 0, or -1 when out of memory (c then holds nothing to free). */
int exec_capture_init(exec_capture *c, size_t cap);
void exec_capture_free(exec_capture *c);
void exec_capture_feed(exec_capture *c, const char *buf, size_t n);
/* The kept bytes as a new string, NULL when nothing was fed (or on OOM:
 * the output is a courtesy, the run's state is not). */
char *exec_capture_finish(const exec_capture *c);

#endif
