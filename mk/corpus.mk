# Importers (src/corpus): xml.c scans the XML formats, gz.c inflates .gz
# inputs with ISA-L (Debian libisal-dev); zlib (zlib1g-dev) for the rest
# (scripts/bootstrap installs both).
LDLIBS_ALL += -lisal -lz
# import parquet (parquet.c) decompresses pages with Snappy (libsnappy-dev),
# zstd (libzstd-dev) and zlib.
LDLIBS_ALL += -lsnappy -lzstd
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
