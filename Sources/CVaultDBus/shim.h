// libdbus from Debian's libdbus-1-dev, for VaultDBus (its one Swift wrapper).
#include <dbus/dbus.h>
