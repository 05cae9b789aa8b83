/* medtrust user: add, delete, list accounts and set passwords in a state
 * (the store's own, or PostgreSQL with --state); passwords are read from
 * stdin (without echo on a terminal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "medtrust/accounts.h"
#include "medtrust/core.h"

extern const struct cli_verb cli_verb_user;

static const struct cli_opt user_opts[] = {
    {"db", 'd', "DIR",
     "store directory holding the accounts (created if "
     "missing); or --state",
     0},
    {"state", 0, "URL",
     "the shared state: postgresql://USER@HOST:PORT/DB (default "
     "$MEDTRUST_STATE); the accounts every serve --state URL sees",
     0},
    {"admin", 'a', NULL, "with add: make the user an admin", 0},
    {"revoke-tokens", 0, NULL, "with passwd: also revoke the user's API tokens",
     0},
    {NULL, 0, NULL, NULL, 0},
};

/* Reads one line from stdin into buf; prompts without echo on a tty. */
static int read_password(char *buf, size_t n)
{
    struct termios old, quiet;
    int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    int ok;

    if (tty) {
        fprintf(stderr, "Password: ");
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    ok = fgets(buf, (int)n, stdin) != NULL;
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fprintf(stderr, "\n");
    }
    if (!ok)
        return -1;
    buf[strcspn(buf, "\r\n")] = '\0';
    return 0;
}

static enum mt_status print_user(const struct mt_user *u, void *user)
{
    (void)user;
    printf("%s\t%s\n", u->name, mt_role_str(u->role));
    return MT_OK;
}

/* passwd: the new password ends every session; with --revoke-tokens the
 * API tokens go too. */
static enum mt_status passwd(struct mt_state *s, const char *name,
                             const char *pw, int revoke, struct mt_error *err)
{
    struct mt_user u;
    enum mt_status st = mt_user_passwd(s, name, pw, err);

    memset(&u, 0, sizeof u);
    if (st == MT_OK && revoke)
        st = mt_user_get(s, name, &u, err);
    if (st == MT_OK && revoke)
        st = mt_token_revoke_all(s, u.id, err);
    return st;
}

static enum mt_status act(struct mt_state *s, const char *verb,
                          const char *name, int admin, int revoke,
                          struct mt_error *err)
{
    char pw[MT_PASSWORD_MAX + 2];
    enum mt_status st;

    if (strcmp(verb, "list") == 0)
        return mt_user_list(s, print_user, NULL, err);
    if (strcmp(verb, "del") == 0)
        return mt_user_del(s, name, err);
    if (read_password(pw, sizeof pw) != 0)
        return mt_fail(err, MT_EINVAL, "no password on stdin");
    if (strcmp(verb, "add") == 0)
        st = mt_user_add(s, name, pw, admin ? MT_ROLE_ADMIN : MT_ROLE_USER,
                         NULL, err);
    else
        st = passwd(s, name, pw, revoke, err);
    memset(pw, 0, sizeof pw);
    return st;
}

static int user_run(struct cli_args *a)
{
    struct mt_error err = {MT_OK, ""};
    struct mt_state *s = NULL;
    const char *db = cli_get(a, "db");
    const char *url = mt_state_url(cli_get(a, "state"));
    const char *verb = a->npos > 0 ? a->pos[0] : "";
    int list = strcmp(verb, "list") == 0;
    enum mt_status st;

    if ((!db && !url) ||
        (strcmp(verb, "add") != 0 && strcmp(verb, "del") != 0 &&
         strcmp(verb, "passwd") != 0 && !list) ||
        a->npos != (list ? 1 : 2)) {
        fprintf(stderr, "usage: medtrust user add|del|passwd --db DIR|--state "
                        "URL NAME [--admin] | list --db DIR|--state URL\n"
                        "Try 'medtrust user --help'.\n");
        return 1;
    }
    st = mt_state_open(url ? url : db, &s, &err);
    if (st == MT_OK)
        st = act(s, verb, list ? NULL : a->pos[1], cli_get(a, "admin") != NULL,
                 cli_get(a, "revoke-tokens") != NULL, &err);
    mt_state_close(s);
    if (st != MT_OK)
        return cli_fail(&err, st);
    if (!list)
        fprintf(stderr, "medtrust: user %s: %s done\n", a->pos[1], verb);
    return 0;
}

const struct cli_verb cli_verb_user = {
    "user",
    "manage accounts of the HTTP server",
    "add|del|passwd --db DIR|--state URL NAME [--admin] | list --db "
    "DIR|--state URL",
    "add and passwd read the password (8 to 1024 bytes) from the first\n"
    "line of stdin, without echo on a terminal; it is stored as an argon2id\n"
    "hash. passwd also ends the user's sessions (and with --revoke-tokens\n"
    "revokes their API tokens). del removes the user's\n"
    "sessions and API tokens; their runs stay in the store.\n"
    "With --state URL (or $MEDTRUST_STATE) the accounts live in that\n"
    "PostgreSQL database, shared by every 'medtrust serve --state URL'\n"
    "(serve reads the same variable); --db is then not needed.",
    user_opts,
    user_run,
};
