"""What the tests share: clients, servers, stand-ins and the data they read."""
