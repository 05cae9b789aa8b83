# Model layer (src/model): libcurl for the OpenAI-compatible backends.
LDLIBS_ALL += -lcurl
