import Till
