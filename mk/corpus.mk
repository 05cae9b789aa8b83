# Importers (src/corpus): expat streams the XML formats, zlib reads
# .gz inputs (Debian libexpat1-dev, zlib1g-dev; scripts/bootstrap).
LDLIBS_ALL += -lexpat -lz
