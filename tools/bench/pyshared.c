/* A python3 whose interpreter is the shared libpython, as ceph-mgr embeds it
 * (Debian's /usr/bin/python3.11 has libpython linked in statically: the same
 * code, built as a position-independent shared library, runs slower).
 * `make bench-module-cost-shared` builds it and runs module_cost.py with it.
 * Declared here rather than through Python.h: python3-dev is not needed. */
extern int Py_BytesMain(int argc, char **argv);

int main(int argc, char **argv)
{
    return Py_BytesMain(argc, argv);
}
