# mk/tokenizer.mk: the Hugging Face tokenizer (formats/tokenizer*.c):
# PCRE2 runs the pre-tokenizer regexes (Debian libpcre2-dev), utf8proc
# the Unicode normalization forms (libutf8proc-dev); both are called from
# formats/tokenizer-text.c only.
TOK_PKGS := libpcre2-8 libutf8proc
CPPFLAGS += $(shell pkg-config --cflags $(TOK_PKGS) 2>/dev/null)
LDLIBS   += $(shell pkg-config --libs $(TOK_PKGS) 2>/dev/null)
