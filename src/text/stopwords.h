/* NLTK's 179 English stop words and VerifAI's lexical-query filter
 * (stopwords.c). */
#ifndef MT_TEXT_STOPWORDS_H
#define MT_TEXT_STOPWORDS_H

#include <stddef.h>

/* 1 when w[0..n) (lower-case) is one of NLTK's English stop words. */
int mtx_nltk_english_stop(const char *w, size_t n);

/* How many words the list holds (179), and word i of it (sorted). */
size_t mtx_nltk_english_count(void);
const char *mtx_nltk_english_word(size_t i);

/* The query without its NLTK stop words: whitespace-separated words,
 * each compared lower-cased (ASCII) with ASCII punctuation at its ends
 * set aside, the others kept as written and joined by one space.
 * mt_malloc'd; NULL when out of memory. */
char *mtx_drop_nltk_stopwords(const char *q);

#endif
