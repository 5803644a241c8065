#!/bin/sh
# Packages installed in an image must not start services.
exit 101
