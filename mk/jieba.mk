# jieba's data for Chinese KPCS (src/text/segment_zh*.c, read by
# src/eval/jieba_files.c): scripts/bootstrap
# extracts dict.txt and the HMM tables (hmm.txt) from the pinned jieba wheel
# into third_party/jieba; `make install` copies them to
# PREFIX/share/medtrust/jieba, where the runtime looks first.
JIEBA_DATA := third_party/jieba

$(BUILD)/obj/src/eval/jieba_files.o: \
    CFLAGS_ALL += -DMT_JIEBA_DATADIR='"$(PREFIX)/share/medtrust/jieba"'

ifneq ($(wildcard $(JIEBA_DATA)/dict.txt),)
.PHONY: install-jieba
install: install-jieba
install-jieba:
	install -d $(DESTDIR)$(PREFIX)/share/medtrust/jieba
	install -m 644 $(JIEBA_DATA)/dict.txt $(JIEBA_DATA)/hmm.txt \
	    $(DESTDIR)$(PREFIX)/share/medtrust/jieba/
endif
