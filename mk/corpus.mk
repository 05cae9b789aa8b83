# Importers (src/corpus): xml.c scans the XML formats, zlib reads
# .gz inputs (Debian zlib1g-dev; scripts/bootstrap).
LDLIBS_ALL += -lz
# tests/unit/test_xml.c checks the scanner against expat, its reference
# (Debian libexpat1-dev): linked there only.
$(BUILD)/tests/test_xml: LDLIBS_ALL += -lexpat
