// placeholder until the module's tests land
