# Importers (src/corpus): xml.c scans the XML formats, gz.c inflates .gz
# inputs with ISA-L (Debian libisal-dev); zlib (zlib1g-dev) for the rest
# (scripts/bootstrap installs both).
LDLIBS_ALL += -lisal -lz
# import parquet (parquet.c) decompresses pages with Snappy (libsnappy-dev),
# zstd (libzstd-dev) and zlib.
LDLIBS_ALL += -lsnappy -lzstd
# Named when missing, as the Makefile names PKGS (else a bare "poppler.h:
# No such file" would be all a build without the bootstrap says); not for
# the goals that run the bootstrap first (the Makefile's
# NO_BOOTSTRAP_GOALS, set after this file is read).
ifneq ($(filter-out bootstrap test lint demo bench clean,$(or \
        $(MAKECMDGOALS),all)),)
CORPUS_MISSING := $(foreach p,poppler-glib snappy libzstd,$(if $(shell \
                    pkg-config --exists $(p) 2>/dev/null && echo y),,$(p)))
ifneq ($(strip $(CORPUS_MISSING)),)
$(error pkg-config finds no $(strip $(CORPUS_MISSING)): run scripts/bootstrap \
  (it installs libpoppler-glib-dev, libsnappy-dev and libzstd-dev))
endif
endif
# import pdf (pdf.c) reads text through Poppler's GLib API
# (libpoppler-glib-dev); its headers (GLib's) are system headers here, so
# our warnings do not apply to them.
POPPLER_CFLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags \
                    poppler-glib 2>/dev/null))
LDLIBS_ALL += $(shell pkg-config --libs poppler-glib 2>/dev/null)
$(BUILD)/obj/src/corpus/pdf.o: CFLAGS_ALL += $(POPPLER_CFLAGS)
# tests/fixtures/make_pdf.c draws the test PDFs with cairo.
$(BUILD)/fixtures/make_pdf: CFLAGS_ALL += $(patsubst -I%,-isystem %,\
                              $(shell pkg-config --cflags cairo 2>/dev/null))
# tests/unit/test_xml.c checks the scanner against expat, its reference
# (Debian libexpat1-dev): linked there only.
$(BUILD)/tests/test_xml: LDLIBS_ALL += -lexpat
