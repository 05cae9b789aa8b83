# Importers (src/corpus): xml.c scans the XML formats, gz.c inflates .gz
# inputs with ISA-L (Debian libisal-dev); zlib (zlib1g-dev) for the rest
# (scripts/bootstrap installs both).
LDLIBS_ALL += -lisal -lz
# import parquet (parquet.c) decompresses pages with Snappy (libsnappy-dev),
# zstd (libzstd-dev) and zlib.
LDLIBS_ALL += -lsnappy -lzstd
# tests/unit/test_xml.c checks the scanner against expat, its reference
# (Debian libexpat1-dev): linked there only.
$(BUILD)/tests/test_xml: LDLIBS_ALL += -lexpat
